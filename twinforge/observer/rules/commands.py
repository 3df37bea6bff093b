"""Shared reading of shell commands: normal form, similarity, files a command writes, error lines.

Each is a pure function of strings and memoised: the observer re-checks a growing trajectory, so
only the commands added since the last check cost anything. What a command writes or deletes is
read by :mod:`twinforge.observer.shell` (a real shell parser).
"""

from __future__ import annotations

import re
import shlex
from functools import lru_cache

from rapidfuzz import fuzz

from twinforge.observer.shell import targets

_ERROR = re.compile(r"(error|exception|traceback|failed|fatal|no such file|not found|permission denied)", re.I)
_BENIGN_NONZERO = ("grep", "egrep", "fgrep", "rg", "diff", "test", "[", "cmp", "find", "which", "command")
_OPERATORS = frozenset(";&|()")


def _tokens(command: str) -> list[str]:
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return command.split()


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


def written_paths(command: str) -> list[str]:
    """Files a command writes, moves, deletes or edits in place, as written (``~`` and known variables expanded)."""
    return [t.word for t in targets(command) if not t.unknown]


@lru_cache(maxsize=65536)
def benign_failure(command: str, returncode: int | None) -> bool:
    """Exit code 1 of a search or comparison (``grep`` found nothing) is an answer, not a failure."""
    tokens = _tokens(command)
    starts = [i + 1 for i, t in enumerate(tokens) if t and set(t) <= _OPERATORS and i + 1 < len(tokens)]
    last = tokens[starts[-1]] if starts else (tokens[0] if tokens else "")
    return returncode == 1 and last.rsplit("/", 1)[-1] in _BENIGN_NONZERO


@lru_cache(maxsize=65536)
def error_signature(output: str) -> str | None:
    """The last error-looking line of an output, with numbers blanked (so line numbers don't matter)."""
    for line in reversed(output.strip().splitlines()):
        if _ERROR.search(line):
            return re.sub(r"\d+", "N", line.strip())[:200]
    return None
