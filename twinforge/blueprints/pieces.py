"""A blueprint file read entry by entry when it is not valid YAML (docs/stage1.md, "Hand-written blueprints").

One broken entry must not hide the others: a file that does not parse is split at its ``---``
document separators and, inside a document that still does not parse, at its top-level list items
(``- `` at the list's indentation, also under ``items:`` or ``blueprints:``); each piece is parsed on
its own, and a piece that still does not parse is reported with the line and column of the error in
the whole file. A document that cannot be split into list items is one broken piece.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from twinforge.core.inputfiles import parse_yaml

_SEPARATOR = re.compile(r"^---(?:\s.*)?$")
_WRAPPER = re.compile(r"^(?:items|blueprints):\s*(?:#.*)?$")
_ITEM = re.compile(r"^(\s*)-(?:\s|$)")
_LINE = re.compile(r"\bline (\d+)\b")


@dataclass(frozen=True)
class Piece:
    """One part of a file parsed on its own.

    Attributes:
        line: Its first line in the file, from 1.
        text: Its text as the file holds it.
        value: What it parsed to (``None`` with ``problem`` set).
        problem: Why it does not parse, with the line and column in the whole file, if it does not.
        items: It is one list item (its value is a list of one entry), not a whole document.
    """

    line: int
    text: str
    value: Any = None
    problem: str | None = None
    items: bool = False


def _parse(text: str, line: int, items: bool) -> Piece:
    """Parse a piece; its problem's line numbers are moved to the whole file's."""
    try:
        return Piece(line, text, parse_yaml(text), items=items)
    except ValueError as exc:
        problem = _LINE.sub(lambda m: f"line {int(m.group(1)) + line - 1}", str(exc))
        return Piece(line, text, None, problem, items)


def _documents(lines: list[str]) -> list[tuple[int, list[str]]]:
    """The file's documents: (first line from 1, lines), split at ``---`` lines."""
    out: list[tuple[int, list[str]]] = []
    start, current = 1, list[str]()
    for number, line in enumerate(lines, 1):
        if _SEPARATOR.match(line):
            if any(s.strip() and not s.lstrip().startswith("#") for s in current):
                out.append((start, current))
            start, current = number + 1, []
            continue
        current.append(line)
    if any(s.strip() and not s.lstrip().startswith("#") for s in current):
        out.append((start, current))
    return out


def _list_items(start: int, lines: list[str]) -> list[tuple[int, list[str]]] | None:
    """A document's top-level list items: (first line, lines), or ``None`` when it is not a list."""
    body = 0
    for index, line in enumerate(lines):
        if _WRAPPER.match(line):
            body = index + 1
            break
    indent: int | None = None
    items: list[tuple[int, list[str]]] = []
    for index in range(body, len(lines)):
        line = lines[index]
        match = _ITEM.match(line)
        if indent is None and match is None and line.strip() and not line.lstrip().startswith("#"):
            return None  # text before the first item: not a list
        if match is not None and (indent is None or len(match.group(1)) == indent):
            indent = len(match.group(1))
            items.append((start + index, [line]))
        elif items:
            if line.strip() and not line.startswith(" " * ((indent or 0) + 1)) and not line.lstrip().startswith("#"):
                return None  # a key outside the list: not only a list
            items[-1][1].append(line)
    return items or None


def read_pieces(text: str) -> list[Piece]:
    """The file as one piece when it parses, else its documents and list items parsed one by one.

    Args:
        text: The file's text.

    Returns:
        Pieces in file order; each either parsed (``value``) or broken (``problem``, with the line
        and column of the error in the whole file).
    """
    whole = _parse(text, 1, False)
    lines = text.splitlines()
    if whole.problem is None:
        return [whole]
    pieces: list[Piece] = []
    for start, doc in _documents(lines):
        parsed = _parse("\n".join(doc) + "\n", start, False)
        if parsed.problem is None:
            pieces.append(parsed)
            continue
        items = _list_items(start, doc)
        if items is None:
            pieces.append(parsed)
            continue
        pieces.extend(_parse("\n".join(item) + "\n", first, True) for first, item in items)
    return pieces or [whole]
