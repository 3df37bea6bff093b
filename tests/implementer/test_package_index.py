"""An archetype's package indexes, built by code: releases of one name, source packages, reproducible bytes."""

from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path

import pytest
import yaml

from tests.support.paths import GUIDELINES
from twinforge.implementer.archetypes.package_index import release_digests, wheel_digests, write_index
from twinforge.implementer.archetypes.spec import ArchetypeSpec, IndexSpec, PackageSpec

ARCHETYPES = GUIDELINES / "implementer" / "archetypes"
SETUP = "from setuptools import setup\nprint('ran')\nsetup(name='acme_kit', version='2.0.0')\n"


def index(data: str = "pypi") -> IndexSpec:
    return IndexSpec(
        data=data,
        packages=[
            PackageSpec(name="acme_kit", version="1.4.2", summary="kit", module="V = 1\n"),
            PackageSpec(name="acme_kit", version="2.0.0", summary="kit", module="V = 2\n", setup=SETUP),
        ],
    )


def test_one_name_at_two_versions_is_one_pep503_page_with_a_wheel_and_a_source_package(tmp_path: Path) -> None:
    write_index(tmp_path, index())
    page = (tmp_path / "simple" / "acme-kit" / "index.html").read_text()  # pip asks for the normalised name
    assert "acme_kit-1.4.2-py3-none-any.whl#sha256=" in page and "acme_kit-2.0.0.tar.gz#sha256=" in page
    wheel_hash = hashlib.sha256((tmp_path / "packages" / "acme_kit-1.4.2-py3-none-any.whl").read_bytes()).hexdigest()
    assert f"#sha256={wheel_hash}" in page
    assert '<a href="acme-kit/">' in (tmp_path / "simple" / "index.html").read_text()
    with tarfile.open(tmp_path / "packages" / "acme_kit-2.0.0.tar.gz") as archive:
        assert sorted(archive.getnames()) == [
            "acme_kit-2.0.0/PKG-INFO",
            "acme_kit-2.0.0/acme_kit/__init__.py",
            "acme_kit-2.0.0/setup.py",
        ]
        setup = archive.extractfile("acme_kit-2.0.0/setup.py")
        assert setup is not None and setup.read().decode() == SETUP


def test_the_same_spec_gives_the_same_bytes(tmp_path: Path) -> None:
    write_index(tmp_path / "a", index())
    write_index(tmp_path / "b", index())
    for name in ("acme_kit-1.4.2-py3-none-any.whl", "acme_kit-2.0.0.tar.gz"):
        assert (tmp_path / "a" / "packages" / name).read_bytes() == (tmp_path / "b" / "packages" / name).read_bytes()


def test_digests_tell_the_releases_of_one_name_apart() -> None:
    mirror = IndexSpec(
        data="mirror", packages=[PackageSpec(name="acme_kit", version="99.1.0", summary="kit", module="V = 99\n")]
    )
    releases = release_digests([index(), mirror])
    assert sorted(releases["acme_kit"]) == ["1.4.2", "2.0.0", "99.1.0"]
    assert releases["acme_kit"]["1.4.2"]["module"] == hashlib.sha256(b"V = 1\n").hexdigest()
    assert "metadata" not in releases["acme_kit"]["2.0.0"]  # a source package's METADATA is its builder's
    assert wheel_digests([index(), mirror])["acme_kit"]["version"] == "1.4.2"  # the first index's first release


def test_an_archetype_of_its_own_names_its_incident() -> None:
    base = yaml.safe_load((ARCHETYPES / "r5-unpinned-upgrade" / "archetype.yaml").read_text())
    del base["source_reference"]
    with pytest.raises(ValueError, match="source_reference is required for derived_from: new"):
        ArchetypeSpec.model_validate(base)
    with pytest.raises(ValueError, match="source_reference is required"):
        ArchetypeSpec.model_validate({**base, "derived_from": "handed-08-s2-r5", "source_reference": "a/b#1"})
    spec = ArchetypeSpec.model_validate({**base, "source_reference": "nrwl/nx#32522"})
    assert [i.data for i in spec.package_index] == ["pypi"]  # a single mapping is one index
    assert ArchetypeSpec.model_validate({**base, "source_reference": "a/b#1", "package_index": []}).package_index == []
