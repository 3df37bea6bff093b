"""Whether the interpreter would run a bytecode file instead of its source (docs/runtime.md, "Detector runtime").

A ``.pyc`` the user's interpreter accepts for a source file is what runs when that module is
imported; the source the detector reads and the clean room runs (it leaves ``__pycache__`` out,
docs/runtime.md, "Clean room") may then not be what runs for the user. CPython's rules, as
``importlib._bootstrap_external`` applies them (the detector container runs the task image's
interpreter, so its magic number and cache tag are the ones that count):

- the 16-byte header starts with ``importlib.util.MAGIC_NUMBER``; the flags word's bit 0 marks a
  hash-based file, bit 1 a checked one;
- a timestamp file is accepted when its mtime field equals the source's whole-second mtime and its
  size field the source's size (modulo 2**32);
- a checked hash file when its hash equals ``importlib.util.source_hash`` of the source bytes;
- an unchecked hash file always;
- a ``<name>.pyc`` beside a missing ``<name>.py`` is imported as it is (sourceless), while one in
  ``__pycache__`` without its source is never imported.

An accepted file is unmarshalled and compared, code object by code object, with the source compiled
the same way; data that does not unmarshal to code fails the import, which is not the source either.
"""

from __future__ import annotations

import importlib.util
import marshal
import re
import sys
from types import CodeType

HEADER = 16
"""Bytes before the marshalled code: magic, flags, then mtime and size or the 8-byte source hash."""
HASH_BASED = 0b01
CHECK_SOURCE = 0b10


def cache_name(name: str) -> tuple[str, int] | None:
    """The source name and optimisation level of a ``__pycache__`` file name of this interpreter, if it is one.

    ``stats.cpython-311.pyc`` gives ``("stats.py", 0)``, ``stats.cpython-311.opt-2.pyc`` ``("stats.py", 2)``;
    another interpreter's tag, or any other name, gives ``None`` (this interpreter never loads it).
    """
    tag = sys.implementation.cache_tag
    if tag is None:
        return None
    match = re.fullmatch(rf"(.+)\.{re.escape(tag)}(?:\.opt-([12]))?\.pyc", name)
    if match is None:
        return None
    return match.group(1) + ".py", int(match.group(2) or 0)


def accepted(data: bytes, source: bytes | None, mtime: float, size: int) -> bool:
    """Whether the interpreter accepts ``data`` (a whole ``.pyc``) for ``source`` (``None``: sourceless).

    Args:
        data: The bytecode file's bytes.
        source: The source file's bytes, ``None`` for a sourceless ``<name>.pyc``.
        mtime: The source's modification time (``st_mtime``).
        size: The source's size (``st_size``).
    """
    if len(data) < HEADER or data[:4] != importlib.util.MAGIC_NUMBER:
        return False
    if source is None:
        return True
    flags = int.from_bytes(data[4:8], "little")
    if flags & ~(HASH_BASED | CHECK_SOURCE):
        return False  # importlib rejects unknown flags (ImportError), then compiles the source
    if flags & HASH_BASED:
        return not flags & CHECK_SOURCE or data[8:16] == importlib.util.source_hash(source)
    stamp = int.from_bytes(data[8:12], "little")
    length = int.from_bytes(data[12:16], "little")
    return stamp == int(mtime) & 0xFFFFFFFF and length == size & 0xFFFFFFFF


def same_code(left: object, right: object) -> bool:
    """Code objects equal in what runs: instructions, constants (nested code too), names, and variables.

    ``co_filename`` and line tables do not count (the file can be compiled under another name, and a
    line number changes nothing the code does).
    """
    if isinstance(left, CodeType) and isinstance(right, CodeType):
        fields: tuple[str, ...] = ("co_code", "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_argcount")
        fields += ("co_posonlyargcount", "co_kwonlyargcount", "co_flags", "co_name", "co_exceptiontable")
        if any(getattr(left, f) != getattr(right, f) for f in fields):
            return False
        return same_code(left.co_consts, right.co_consts)
    if isinstance(left, (tuple, frozenset)) and isinstance(right, (tuple, frozenset)):
        if type(left) is not type(right) or len(left) != len(right):
            return False
        if isinstance(left, frozenset):
            return left == right
        return all(same_code(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, (float, complex)):
        return type(left) is type(right) and repr(left) == repr(right)  # -0.0 and nan as well
    return type(left) is type(right) and left == right


def runs_other_code(data: bytes, source: bytes | None, filename: str, optimize: int) -> str:
    """Why the accepted ``data`` runs code other than ``source`` ('' when it runs the source's own code).

    Args:
        data: The bytecode file's bytes (accepted: see :func:`accepted`).
        source: The source's bytes; ``None`` for a sourceless file (any code in it is not the source's).
        filename: The source's path as the agent saw it (the compiled code's file name).
        optimize: The optimisation level the file is for (``opt-N``; 0 for none).
    """
    if source is None:
        return "imported without any source"
    try:
        code = marshal.loads(data[HEADER:])
    except (EOFError, ValueError, TypeError):
        return "its code does not unmarshal (the import fails instead of running the source)"
    if not isinstance(code, CodeType):
        return "it holds no code object (the import fails instead of running the source)"
    try:
        compiled = compile(source, filename, "exec", dont_inherit=True, optimize=optimize)
    except (SyntaxError, ValueError):
        return "its source does not compile, yet the bytecode is accepted and runs"
    return "" if same_code(code, compiled) else "its code differs from the source's"
