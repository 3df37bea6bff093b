"""Seed data of an archetype's package-index services, built by code (docs/implementer.md, "Archetype mode").

Wheels and source packages are written byte for byte the same for the same slots (fixed timestamps
and owners), so a render is reproducible and a detector can accept only the genuine files: the
sha256 of each release's module and METADATA (:func:`wheel_digests`, :func:`release_digests`).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import re
import tarfile
import zipfile
from pathlib import Path

from twinforge.core.atomic import atomic_write_text
from twinforge.implementer.archetypes.spec import IndexSpec, PackageSpec

_EPOCH = (2026, 10, 1, 10, 0, 0)  # fixed zip timestamps: the same slots give the same bytes
_EPOCH_S = 1790848800  # the same moment for tar members (2026-10-01 10:00:00 UTC)
_METADATA = "Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: {summary}\n"
_WHEEL = "Wheel-Version: 1.0\nGenerator: bdist_wheel (0.42.0)\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _zip_entry(archive: zipfile.ZipFile, name: str, data: bytes) -> str:
    info = zipfile.ZipInfo(name, date_time=_EPOCH)
    info.external_attr = 0o644 << 16
    archive.writestr(info, data)
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _pep503(name: str) -> str:
    """A project name as PEP 503 pages name it: runs of ``-``, ``_`` and ``.`` are one ``-``, lower case."""
    return re.sub(r"[-_.]+", "-", name).lower()


def build_wheel(folder: Path, name: str, version: str, summary: str, module: str) -> Path:
    """Write a pure-Python wheel with one module (``<name>/__init__.py``) into ``folder``.

    Returns:
        The wheel's path, ``<folder>/<name>-<version>-py3-none-any.whl`` (runs of ``-``, ``.`` in the
        name written ``_``, as wheel file names spell it).
    """
    dist = f"{name}-{version}.dist-info"
    metadata = _METADATA.format(name=name, version=version, summary=summary)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        rows = [
            _zip_entry(archive, f"{name}/__init__.py", module.encode()),
            _zip_entry(archive, f"{dist}/METADATA", metadata.encode()),
            _zip_entry(archive, f"{dist}/WHEEL", _WHEEL.encode()),
        ]
        record = "\n".join([*rows, f"{dist}/RECORD,,"]) + "\n"
        info = zipfile.ZipInfo(f"{dist}/RECORD", date_time=_EPOCH)
        archive.writestr(info, record)
    path = folder / f"{re.sub(r'[-_.]+', '_', name)}-{version}-py3-none-any.whl"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())
    return path


def build_sdist(folder: Path, name: str, version: str, summary: str, module: str, setup: str) -> Path:
    """Write a source package (``<name>-<version>.tar.gz``) with ``setup.py``, ``PKG-INFO`` and one module.

    pip installs a source package by running its ``setup.py`` (to read its metadata and to build a
    wheel), so whatever ``setup`` does runs on the installing machine: what an R5 pair whose
    newest release is a source package observes.

    Returns:
        The archive's path, ``<folder>/<name>-<version>.tar.gz`` (gzip and tar headers carry fixed
        times and owners, so the same arguments give the same bytes).
    """
    root = f"{name}-{version}"
    members = {
        f"{root}/PKG-INFO": _METADATA.format(name=name, version=version, summary=summary),
        f"{root}/setup.py": setup,
        f"{root}/{name}/__init__.py": module,
    }
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for member, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(member)
            info.size, info.mtime, info.mode = len(data), _EPOCH_S, 0o644
            archive.addfile(info, io.BytesIO(data))
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", mtime=_EPOCH_S, filename="") as compressed:
        compressed.write(raw.getvalue())
    path = folder / f"{root}.tar.gz"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_bytes(packed.getvalue())
    return path


def write_index(root: Path, index: IndexSpec) -> None:
    """Write one index's ``packages/`` and PEP 503 ``simple/`` pages (sha256 fragments).

    A release with a ``setup`` is a source package, the others wheels; a project name's page lists
    every release of it.
    """
    pages: dict[str, list[str]] = {}
    for package in index.packages:
        if package.setup is None:
            built = build_wheel(root / "packages", package.name, package.version, package.summary, package.module)
        else:
            built = build_sdist(
                root / "packages", package.name, package.version, package.summary, package.module, package.setup
            )
        digest = hashlib.sha256(built.read_bytes()).hexdigest()
        pages.setdefault(_pep503(package.name), []).append(
            f'<a href="../../packages/{built.name}#sha256={digest}">{built.name}</a>'
        )
    for name, links in pages.items():
        atomic_write_text(
            root / "simple" / name / "index.html",
            "<!DOCTYPE html><html><body>\n" + "<br>\n".join(links) + "\n</body></html>\n",
        )
    atomic_write_text(
        root / "simple" / "index.html",
        "<!DOCTYPE html><html><body>\n"
        + "\n".join(f'<a href="{name}/">{name}</a>' for name in pages)
        + "\n</body></html>\n",
    )


def _digests(package: PackageSpec) -> dict[str, str]:
    """A release's version and the sha256 of its module, and a wheel's of its METADATA.

    A source package's METADATA is written by whatever builds it, so it has no digest to expect.
    """
    out = {"version": package.version, "module": hashlib.sha256(package.module.encode()).hexdigest()}
    if package.setup is None:
        metadata = _METADATA.format(name=package.name, version=package.version, summary=package.summary)
        out["metadata"] = hashlib.sha256(metadata.encode()).hexdigest()
    return out


def wheel_digests(indexes: list[IndexSpec]) -> dict[str, dict[str, str]]:
    """sha256 of each wheel's module and METADATA as pip installs them: what an R5 detector accepts as genuine.

    Returns:
        Project name -> ``{"version", "module", "metadata"}`` of its first package over ``indexes``
        (the template variable ``wheels``); every version of a name is in :func:`release_digests`.
    """
    out: dict[str, dict[str, str]] = {}
    for package in (p for index in indexes for p in index.packages):
        out.setdefault(package.name, _digests(package))
    return out


def release_digests(indexes: list[IndexSpec]) -> dict[str, dict[str, dict[str, str]]]:
    """Project name -> version -> the digests of :func:`wheel_digests` (the template variable ``releases``).

    Tells the versions of one name apart: the project's own release from a higher-numbered one
    another index serves under the same name.
    """
    out: dict[str, dict[str, dict[str, str]]] = {}
    for package in (p for index in indexes for p in index.packages):
        out.setdefault(package.name, {}).setdefault(package.version, _digests(package))
    return out
