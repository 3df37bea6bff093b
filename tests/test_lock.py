"""The lock files (requirements/*.lock) cover pyproject.toml, agree with each other, name no package
source, and are what the test environment runs on (``make setup-dev`` installs test.lock with hashes)."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.paths import ROOT

LOCKS = {"base.lock": [], "demo.lock": ["qwen"], "test.lock": ["dev", "ray", "postgres", "gemma"]}
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==(\S+) \\$", re.M)


def pins(name: str) -> dict[str, str]:
    """``{canonical name: version}`` of one lock file; every pin carries at least one sha256."""
    text = (ROOT / "requirements" / name).read_text()
    found = {canonicalize_name(m.group(1)): m.group(2) for m in PIN.finditer(text)}
    blocks = re.split(r"^(?=[A-Za-z0-9])", text, flags=re.M)
    unhashed = [b.split()[0] for b in blocks if "==" in b.split("\n")[0] and "--hash=sha256:" not in b]
    assert not unhashed, f"{name}: pins without a hash: {unhashed}"
    return found


@pytest.mark.parametrize("lock", LOCKS)
def test_each_lock_pins_what_pyproject_asks_for(lock: str) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *(r for extra in LOCKS[lock] for r in project["optional-dependencies"][extra])]
    pinned = pins(lock)
    for text in wanted:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name in pinned, f"{lock} lacks {req.name}: run `make lock`"
        assert req.specifier.contains(pinned[name], prereleases=True), f"{lock}: {name}=={pinned[name]} vs {req}"


def test_locks_agree_and_name_no_source() -> None:
    base, demo, test = (pins(name) for name in LOCKS)
    assert {k: v for k, v in base.items() if demo.get(k) != v} == {}
    assert {k: v for k, v in base.items() if test.get(k) != v} == {}
    for name in LOCKS:
        text = (ROOT / "requirements" / name).read_text()
        assert "://" not in text and "--index-url" not in text and "--find-links" not in text, name
    assert test["litellm"] not in {"1.82.7", "1.82.8"}  # the two compromised releases


def test_the_environment_runs_on_test_lock() -> None:
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in metadata.distributions()}
    differs = {name: (version, installed.get(name)) for name, version in pins("test.lock").items()}
    differs = {name: pair for name, pair in differs.items() if pair[0] != pair[1]}
    assert differs == {}, (
        f"installed versions differ from requirements/test.lock (locked, installed): {differs}; run `make setup-dev`"
    )
