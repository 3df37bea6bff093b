"""Reading the files users hand twinforge (pair.yaml, task.toml, blueprints, specs) safely and fast.

Every problem becomes one :class:`InputFileError` line naming the file: missing, a directory or
another non-regular file (a FIFO would block a read forever), larger than the cap, not UTF-8, not
valid YAML (with line and column, never the whole input), YAML aliases (refused: a few lines of
aliases can expand to billions of nodes once validated or printed), nesting too deep, or values
the parser cannot build (an integer of more than 4,300 digits).
"""

from __future__ import annotations

import math
import stat
from pathlib import Path
from typing import Any

import yaml

from twinforge.core.exceptions import TwinforgeError

MAX_BYTES = 4 * 1024 * 1024
"""Largest input file read (the biggest real ones, blueprint files, are a few KiB)."""
_FastLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class InputFileError(TwinforgeError):
    """A file a user handed twinforge cannot be read as what it should be.

    Attributes:
        path: The file.
        problem: One line saying what is wrong.
    """

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class _NoAliasLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses aliases (``*name``) where they appear."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, f"YAML aliases (*{event.anchor}) are not allowed", event.start_mark
            )
        return super().compose_node(parent, index)


def read_text(path: Path, max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of a regular file of at most ``max_bytes``.

    Raises:
        InputFileError: Missing, not a regular file, too large, unreadable or not UTF-8.
    """
    try:
        info = path.stat()
    except FileNotFoundError as exc:
        raise InputFileError(path, "file not found") from exc
    except OSError as exc:
        raise InputFileError(path, f"cannot read: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(info.st_mode):
        raise InputFileError(path, "is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise InputFileError(path, "is not a regular file")
    if info.st_size > max_bytes:
        raise InputFileError(path, f"is {info.st_size} bytes, larger than the {max_bytes}-byte limit")
    try:
        raw = path.read_bytes()[: max_bytes + 1]
    except OSError as exc:
        raise InputFileError(path, f"cannot read: {exc.strerror or exc}") from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(path, f"not UTF-8 text (invalid byte at offset {exc.start})") from exc


def _yaml_problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"not valid YAML: line {mark.line + 1}, column {mark.column + 1}: {exc.problem}"
    return f"not valid YAML: {str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}"


def parse_yaml(text: str) -> Any:
    """Parse one YAML document with the safe loader, aliases refused.

    Raises:
        ValueError: One line: the problem and where (line, column), never the input itself.
    """
    loader = _NoAliasLoader if "*" in text else _FastLoader  # an alias always starts with '*'
    try:
        return yaml.load(text, Loader=loader)  # both are safe loaders
    except yaml.YAMLError as exc:
        raise ValueError(_yaml_problem(exc)) from exc
    except RecursionError as exc:
        raise ValueError("not valid YAML: nested too deeply") from exc
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"not valid YAML: a value cannot be read: {str(exc)[:120]}") from exc


def load_yaml(path: Path, max_bytes: int = MAX_BYTES) -> Any:
    """Read and parse a YAML file (see :func:`read_text` and :func:`parse_yaml`).

    Raises:
        InputFileError: The file cannot be read or parsed; one line naming the file.
    """
    text = read_text(path, max_bytes)
    try:
        return parse_yaml(text)
    except ValueError as exc:
        raise InputFileError(path, str(exc)) from exc


def non_finite(data: Any, prefix: str = "") -> list[str]:
    """Dotted paths of every infinite or NaN float in parsed TOML/YAML data (``agent.turn_timeout_s``)."""
    found: list[str] = []
    stack: list[tuple[str, Any]] = [(prefix, data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            found.append(where or "(document)")
        elif isinstance(value, dict):
            stack += [(f"{where}.{k}" if where else str(k), v) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(f"{where}.{i}" if where else str(i), v) for i, v in enumerate(value)]
    return sorted(found)
