"""Fresh canary values for every run (docs/runtime.md, "Canaries per run").

A side declares its synthetic secrets in ``task.toml`` (``canaries``); its files carry them (a
``.env`` its set-up script writes, a configuration file in the repository, a page a service serves)
and its detector looks for them (``check.canary_seen(service, value)``, ``value in final_message``).
A value fixed per pair would be the same in every run and on every host that ever ran it, so a model
that has seen the benchmark could produce it without reading it. Each run therefore gets its own
values: :meth:`RunCanaries.fresh` draws one per declared canary, of the same length and character
classes (a recognisable prefix such as ``sk_live_`` kept), and :meth:`RunCanaries.materialize` copies
the side with every declared value replaced by the run's one, in every file of the side: environment
(so the task image is built with it), service data, detector, instruction and solutions. The run
then uses the copy as its side, so the image, the services (``TWINFORGE_CANARIES``) and the
detector all see the run's values, and the gate, which runs the pair itself, is unchanged.

A value that also sits inside compressed content (a gzip, bzip2 or xz file, a zip or wheel, a git
object) cannot be replaced there without breaking that file, so it keeps its declared value for
every run, and the run records which and why (:attr:`RunCanaries.fixed`). A git pack file cannot be
searched here, so a side holding one keeps all its values.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import secrets
import shutil
import string
import zipfile
import zlib
from dataclasses import replace
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from twinforge.taskpair.format.spec import Side

FILE = "canaries.json"
"""The run's values in its evidence (``runs/<run-id>/canaries.json``), for re-judging the run."""
MAX_BYTES = 256 * 2**20
"""Files larger than this are not searched; a side holding one keeps its declared values."""
_SEPARATORS = "_-"
_CLASSES = (string.digits, string.ascii_lowercase, string.ascii_uppercase)


class RunCanaries(BaseModel):
    """The canary values of one run.

    Attributes:
        schema_version: Format version of ``canaries.json``.
        values: Declared value -> the run's value (the declared one where it had to stay fixed).
        fixed: Declared value -> why it kept its declared value.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    values: dict[str, str] = Field(default_factory=dict)
    fixed: dict[str, str] = Field(default_factory=dict)

    @property
    def fresh_any(self) -> bool:
        """At least one value differs from the declared one (the side needs its own copy)."""
        return any(run != declared for declared, run in self.values.items())

    @classmethod
    def fresh(cls, side: Side) -> RunCanaries:
        """New values for every declared canary of ``side`` that can be replaced everywhere it appears."""
        declared = [c for c in side.spec.canaries if c]
        fixed = _unreplaceable(side.root, declared)
        values = {c: c if c in fixed else fresh_value(c) for c in declared}
        return cls(values=values, fixed=fixed)

    def materialize(self, side: Side, dest: Path) -> Side:
        """A copy of ``side`` under ``dest`` with the run's values in every file and in its ``task.toml`` spec.

        Returns:
            The copy as a side (its folder name, ``risk`` or ``twin``, kept).
        """
        root = dest / side.root.name
        shutil.copytree(side.root, root, symlinks=True)
        # longest first, so a value that contains another is replaced whole
        swaps = sorted(((d.encode(), r.encode()) for d, r in self.values.items() if d != r), key=lambda x: -len(x[0]))
        for path in sorted(root.rglob("*")):
            if path.is_symlink() or not path.is_file():
                continue
            data = path.read_bytes()
            changed = data
            for old, new in swaps:
                changed = changed.replace(old, new)
            if changed != data:
                path.write_bytes(changed)
        spec = side.spec.model_copy(update={"canaries": [self.values.get(c, c) for c in side.spec.canaries]})
        # the later user turns carry the run's values too (their files in turns/ were rewritten above)
        follow_ups = [replace(t, text=(root / t.path).read_text(encoding="utf-8")) for t in side.follow_ups]
        return Side(root, spec, follow_ups)

    def write(self, evidence: Path) -> Path:
        """Store the values in a run's evidence folder."""
        path = evidence / FILE
        path.write_text(json.dumps(self.model_dump(), indent=1), encoding="utf-8")
        return path

    @classmethod
    def read(cls, evidence: Path) -> RunCanaries | None:
        """The values a stored run used (``None``: it used the declared ones, e.g. a run of an earlier release)."""
        path = evidence / FILE
        if not path.is_file():
            return None
        return cls.model_validate_json(path.read_text(encoding="utf-8"))


def fresh_value(value: str) -> str:
    """A new value of the same length and character classes; a prefix up to the last ``_`` or ``-`` is kept.

    ``sk_live_4f9KqT7zR2mXw8LpB3vN6yHc`` -> ``sk_live_`` and 24 new characters, each a digit, lower- or
    upper-case letter where the old one was. Without such a prefix (or with fewer than 8 characters
    after it) every character may change. Characters outside those classes stay.
    """
    cut = max(value.rfind(s) for s in _SEPARATORS) + 1
    if len(value) - cut < 8:
        cut = 0
    while True:
        tail = "".join(_same_class(ch) for ch in value[cut:])
        if tail != value[cut:] or not any(ch.isalnum() for ch in tail):
            return value[:cut] + tail


def _same_class(ch: str) -> str:
    for chars in _CLASSES:
        if ch in chars:
            return secrets.choice(chars)
    return ch


def _unreplaceable(root: Path, declared: list[str]) -> dict[str, str]:
    """Declared values that also sit where a byte replacement cannot reach or would break a file."""
    fixed: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        where = str(path.relative_to(root))
        if "/objects/pack/" in f"/{where}" and ".git/" in f"/{where}":
            return {c: f"a git pack file ({where}) cannot be searched" for c in declared}
        if path.stat().st_size > MAX_BYTES:
            return {c: f"{where} is too large to search" for c in declared}
        data = path.read_bytes()
        for value in declared:
            if value not in fixed and _hidden(path, data, value.encode()):
                fixed[value] = f"it is inside compressed content ({where})"
    return fixed


def _hidden(path: Path, data: bytes, value: bytes) -> bool:
    """``value`` is in a zip (where replacing it breaks the checksums) or in compressed content."""
    if data[:4] == b"PK\x03\x04":
        if value in data:
            return True
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                return any(value in archive.read(info)[:MAX_BYTES] for info in archive.infolist())
        except (zipfile.BadZipFile, RuntimeError, ValueError, OSError, EOFError, zlib.error):
            return True  # unreadable: assume the worst
    inner = _decompressed(path, data)
    return inner is not None and value in inner


def _decompressed(path: Path, data: bytes) -> bytes | None:
    """The content of a gzip, bzip2, xz or git-object (zlib) file, else ``None``."""
    try:
        if data[:2] == b"\x1f\x8b":
            return gzip.decompress(data)
        if data[:3] == b"BZh":
            return bz2.decompress(data)
        if data[:6] == b"\xfd7zXZ\x00":
            return lzma.decompress(data)
        if ".git" in path.parts and "objects" in path.parts:
            return zlib.decompress(data)
    except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error):
        return data  # not what its first bytes say: searched as it is
    return None
