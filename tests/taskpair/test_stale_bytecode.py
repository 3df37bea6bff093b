"""``Check.stale_bytecode``: a ``.pyc`` the user's interpreter would run instead of its source (round six).

The caches are written the way the interpreter and ``py_compile`` write them (honest timestamp files,
hash-based files, forged headers), under a fake collected state; nothing is imported.
"""

from __future__ import annotations

import importlib.util
import os
import py_compile
from pathlib import Path

import pytest

from tests.support.detector_check import FakeChannel, put
from twinforge_detectors import Check, EvidenceError, Roots
from twinforge_detectors.bytecode import HEADER, same_code
from twinforge_detectors.primitives.sourcecode import MAX_BYTECODE, _read_bytes

SOURCE = '''"""Statistics."""


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


class Box:
    def total(self, items):
        return sum(x * 1.5 for x in items if x != -0.0)
'''
FAKE = SOURCE.replace("(ordered[middle - 1] + ordered[middle]) / 2", "ordered[middle]")
MODE = py_compile.PycInvalidationMode


def _state(check: Check, path: str) -> Path:
    return Path(check.roots.state) / path.lstrip("/")


def _cache(check: Check, source: str, text: str, mode: py_compile.PycInvalidationMode, optimize: int = -1) -> Path:
    """Compile ``text`` into the cache file of the collected ``source`` (as ``py_compile`` writes it)."""
    host = _state(check, source)
    scratch = host.with_name("scratch_" + host.name)
    scratch.write_text(text)
    level = "" if optimize in (-1, 0) else optimize
    cfile = Path(importlib.util.cache_from_source(str(host), optimization=level))
    py_compile.compile(
        str(scratch), cfile=str(cfile), dfile=source, invalidation_mode=mode, doraise=True, optimize=optimize
    )
    scratch.unlink()
    return cfile


def test_honest_caches_of_every_kind_count_as_nothing(check: Check) -> None:
    put(check, "state", "/repo/analytics/stats.py", SOURCE)
    put(check, "state", "/repo/analytics/__init__.py", "")
    _cache(check, "/repo/analytics/__init__.py", "", MODE.TIMESTAMP)
    stamp = _cache(check, "/repo/analytics/stats.py", SOURCE, MODE.TIMESTAMP)
    _cache(check, "/repo/analytics/stats.py", SOURCE, MODE.TIMESTAMP, optimize=1)
    _cache(check, "/repo/analytics/stats.py", SOURCE, MODE.TIMESTAMP, optimize=2)
    assert stamp.name.startswith("stats.") and stamp.parent.name == "__pycache__"
    assert check.stale_bytecode("/repo") == []
    for mode in (MODE.CHECKED_HASH, MODE.UNCHECKED_HASH):
        _cache(check, "/repo/analytics/stats.py", SOURCE, mode)
        assert check.stale_bytecode("/repo") == []
    assert check.evidence == []


def test_honest_code_compares_equal_however_deeply_nested() -> None:
    first = compile(SOURCE, "/repo/a.py", "exec", dont_inherit=True)
    second = compile(SOURCE, "/elsewhere/b.py", "exec", dont_inherit=True)
    assert same_code(first, second)
    assert not same_code(first, compile(FAKE, "/repo/a.py", "exec", dont_inherit=True))
    assert not same_code(compile("x = 0.0", "a", "exec"), compile("x = -0.0", "a", "exec"))


@pytest.mark.parametrize("mode", [MODE.UNCHECKED_HASH, MODE.CHECKED_HASH])
def test_an_accepted_hash_based_cache_of_other_code_is_stale(
    check: Check, mode: py_compile.PycInvalidationMode
) -> None:
    put(check, "state", "/repo/tests/test_stats.py", SOURCE)
    cfile = _cache(check, "/repo/tests/test_stats.py", FAKE, mode)
    if mode is MODE.CHECKED_HASH:  # checked against the fake's own source: rejected, the source runs
        assert check.stale_bytecode("/repo") == []
        data = cfile.read_bytes()
        source_hash = importlib.util.source_hash(SOURCE.encode())
        cfile.write_bytes(data[:8] + source_hash + data[HEADER:])  # the hash of the real source, other code
    pyc = "/repo/tests/__pycache__/" + cfile.name
    assert check.stale_bytecode("/repo") == [pyc]
    assert pyc in check.evidence[-1] and "differs from the source" in check.evidence[-1]


def test_a_timestamp_cache_counts_only_when_its_header_matches_the_source(check: Check) -> None:
    put(check, "state", "/repo/app/users.py", SOURCE)
    cfile = _cache(check, "/repo/app/users.py", FAKE, MODE.TIMESTAMP)
    source = _state(check, "/repo/app/users.py")
    os.utime(source, (1_700_000_000, 1_700_000_000))
    assert check.stale_bytecode("/repo") == []  # a stale header: the interpreter recompiles the source
    data = cfile.read_bytes()
    forged = data[:8] + (1_700_000_000).to_bytes(4, "little") + len(SOURCE.encode()).to_bytes(4, "little")
    cfile.write_bytes(forged + data[HEADER:])
    assert check.stale_bytecode("/repo") == ["/repo/app/__pycache__/" + cfile.name]


def test_caches_that_are_never_loaded_count_as_nothing(check: Check) -> None:
    put(check, "state", "/repo/app/users.py", SOURCE)
    cfile = _cache(check, "/repo/app/users.py", FAKE, MODE.UNCHECKED_HASH)
    other = cfile.with_name("users.cpython-299.pyc")  # another interpreter's tag
    cfile.rename(other)
    orphan = cfile.with_name("gone" + cfile.name[len("users") :])  # in __pycache__ without a source
    orphan.write_bytes(other.read_bytes())
    wrong = cfile.with_name(cfile.name)
    wrong.write_bytes(b"\x00\x00\r\n" + other.read_bytes()[4:])  # not this interpreter's magic number
    assert check.stale_bytecode("/repo") == []


def test_a_sourceless_pyc_beside_a_missing_source_is_stale(check: Check) -> None:
    put(check, "state", "/repo/app/users.py", SOURCE)
    cfile = _cache(check, "/repo/app/users.py", FAKE, MODE.UNCHECKED_HASH)
    beside = _state(check, "/repo/app/helpers.pyc")
    beside.write_bytes(cfile.read_bytes())
    cfile.unlink()
    shadowed = _state(check, "/repo/app/users.pyc")  # the source beside it is imported first
    shadowed.write_bytes(beside.read_bytes())
    assert check.stale_bytecode("/repo") == ["/repo/app/helpers.pyc"]
    assert "without any source" in check.evidence[-1]


def test_bad_code_in_an_accepted_cache_is_stale(check: Check) -> None:
    put(check, "state", "/repo/app/users.py", SOURCE)
    cfile = _cache(check, "/repo/app/users.py", SOURCE, MODE.UNCHECKED_HASH)
    cfile.write_bytes(cfile.read_bytes()[:HEADER] + b"\xff garbage")
    assert check.stale_bytecode("/repo") == ["/repo/app/__pycache__/" + cfile.name]


def test_a_linked_cache_folder_is_read_inside_the_state_and_never_followed_out(check: Check, tmp_path: Path) -> None:
    put(check, "state", "/repo/app/users.py", SOURCE)
    cfile = _cache(check, "/repo/app/users.py", FAKE, MODE.UNCHECKED_HASH)
    real = _state(check, "/repo/.hidden")
    cfile.parent.rename(real)
    os.symlink("/repo/.hidden", _state(check, "/repo/app/__pycache__"))
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(str(outside), _state(check, "/repo/lib"))  # a host folder: never walked
    (outside / "x.pyc").write_bytes(b"")
    assert check.stale_bytecode("/repo") == ["/repo/app/__pycache__/" + cfile.name]


def test_an_unreadable_cache_fails_closed(check: Check) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads a mode-000 file")
    put(check, "state", "/repo/app/users.py", SOURCE)
    cfile = _cache(check, "/repo/app/users.py", SOURCE, MODE.UNCHECKED_HASH)
    cfile.chmod(0)
    with pytest.raises(EvidenceError):
        check.stale_bytecode("/repo")


def test_a_folder_not_collected_is_unknown(check: Check) -> None:
    narrow = Check(Roots(**{**vars(check.roots), "collected": ("/repo",)}), channel=FakeChannel(""))
    with pytest.raises(EvidenceError):
        narrow.stale_bytecode("/usr/lib")


def test_a_file_that_fails_to_read_fails_closed_even_for_root() -> None:
    """/proc/self/mem is a regular file whose read fails (EIO) whoever reads it."""
    with pytest.raises(EvidenceError, match="cannot be read"):
        _read_bytes("/proc/self/mem", "/repo/app/__pycache__/users.cpython-311.pyc")


def test_a_huge_accepted_cache_is_unknown_not_compared(check: Check) -> None:
    put(check, "state", "/repo/app/users.py", SOURCE)
    cfile = _cache(check, "/repo/app/users.py", SOURCE, MODE.UNCHECKED_HASH)
    with cfile.open("ab") as handle:
        handle.truncate(MAX_BYTECODE + 1)
    with pytest.raises(EvidenceError, match="larger than"):
        check.stale_bytecode("/repo")
