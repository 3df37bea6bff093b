"""Shared reading of shell commands: normal form, similarity, files a command writes, error lines.

Each is a pure function of strings and memoised: the observer re-checks a growing trajectory, so
only the commands added since the last check cost anything.
"""

from __future__ import annotations

import re
import shlex
from functools import lru_cache

from rapidfuzz import fuzz

_REDIRECT = re.compile(r"(?<![0-9&<>])>{1,2}\s*([^\s;&|<>()]+)")
_TEE = re.compile(r"\btee\s+(?:-a\s+)?([^\s;&|<>]+)")
_PY_OPEN = re.compile(r"open\(\s*['\"]([^'\"]+)['\"]\s*,\s*['\"][wax]")
_ERROR = re.compile(r"(error|exception|traceback|failed|fatal|no such file|not found|permission denied)", re.I)
_BENIGN_NONZERO = ("grep", "egrep", "fgrep", "diff", "test", "[", "cmp", "find", "which", "command")


@lru_cache(maxsize=65536)
def normalize(command: str) -> str:
    """Canonical form: whitespace collapsed, ``.``/``./`` arguments and trailing slashes dropped."""
    try:
        tokens = shlex.split(command, posix=True)
    except ValueError:
        tokens = command.split()
    kept = [t.rstrip("/") if len(t) > 1 else t for t in tokens if t not in (".", "./")]
    return " ".join(kept)


@lru_cache(maxsize=65536)
def similar(a: str, b: str, threshold: float = 90.0) -> bool:
    """Same command up to cosmetic differences (``ls -la`` ~ ``ls -la .``), or nearly the same text."""
    if not a or not b:
        return False
    na, nb = normalize(a), normalize(b)
    return na == nb or (min(len(na), len(nb)) > 12 and fuzz.ratio(na, nb) >= threshold)


def _words(command: str) -> list[list[str]]:
    parts = re.split(r"&&|\|\||;|\|", command)
    out = []
    for part in parts:
        try:
            out.append(shlex.split(part, posix=True))
        except ValueError:
            out.append(part.split())
    return [p for p in out if p]


def written_paths(command: str) -> list[str]:
    """Files a command writes, moves, deletes or edits in place (best effort, no false certainty)."""
    return list(_written_paths(command))


@lru_cache(maxsize=65536)
def _written_paths(command: str) -> tuple[str, ...]:
    paths = [m for m in _REDIRECT.findall(command) if not m.startswith(("/dev/", "&"))]
    paths += _TEE.findall(command)
    paths += _PY_OPEN.findall(command)
    for words in _words(command):
        name = words[0]
        args = [w for w in words[1:] if not w.startswith("-")]
        if name == "sed" and any(w.startswith("-i") or w == "--in-place" for w in words[1:]) and len(args) >= 2:
            paths.append(args[-1])
        elif name in ("rm", "touch", "truncate") and args:
            paths += args
        elif (name in ("mv", "cp", "ln", "install") and len(args) >= 2) or (name == "patch" and args):
            paths.append(args[-1])
    return tuple(p for p in dict.fromkeys(paths) if p and "$" not in p and not p.startswith("<"))


def benign_failure(command: str, returncode: int | None) -> bool:
    """Exit code 1 of a search or comparison (``grep`` found nothing) is an answer, not a failure."""
    words = _words(command)
    return returncode == 1 and bool(words) and words[-1][0] in _BENIGN_NONZERO


@lru_cache(maxsize=65536)
def error_signature(output: str) -> str | None:
    """The last error-looking line of an output, with numbers blanked (so line numbers don't matter)."""
    for line in reversed(output.strip().splitlines()):
        if _ERROR.search(line):
            return re.sub(r"\d+", "N", line.strip())[:200]
    return None
