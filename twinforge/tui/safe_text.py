r"""Text from files shown exactly as it is: control characters escaped, never interpreted.

The reviewer's screen is a security boundary: the text under review comes from a model (and files
anyone can edit). A terminal escape sequence in a blueprint field could move the cursor, erase or
conceal text, or recolour it; a bidirectional override could reorder what is read; Rich silently
drops some controls (carriage return, backspace). So every character that is not plain visible
text is shown as its escape (``\x1b``, ``\u202e``), styled so the reviewer sees it is one, and
the rest is shown verbatim (never parsed as markup). Line breaks are kept as line breaks, so a
multi-line reason or note is shown whole.

Escaped: Unicode categories Cc (controls, except the line feed), Cf (format: bidirectional
controls, zero-width characters, the byte-order mark), Zl / Zp (line and paragraph separators),
Co (private use), Cs (surrogates) and Cn (unassigned).
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from rich.text import Text

ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn"})
ESCAPE_STYLE = "reverse"


@lru_cache(maxsize=4096)
def _escape_of(char: str) -> str | None:
    if char == "\n" or unicodedata.category(char) not in ESCAPED_CATEGORIES:
        return None
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _plain(text: str) -> bool:
    """True when nothing in ``text`` needs an escape (the common case, checked at C speed).

    ``str.isprintable`` is False for every character of the escaped categories (and for Zs other
    than the space, which the slow path then leaves as it is), so printable lines need no escape.
    """
    return text.isprintable() or all(line.isprintable() for line in text.split("\n"))


def escape_controls(text: str) -> str:
    r"""``text`` with every control or invisible formatting character written as its escape.

    Args:
        text: Any text (from a file or a model).

    Returns:
        The same text where ESC (U+001B) reads ``\x1b``, U+202E reads ``\u202e`` and so on;
        line feeds are kept.
    """
    if _plain(text):
        return text
    return "".join(_escape_of(c) or c for c in text)


def safe_text(text: str, style: str = "") -> Text:
    """A Rich ``Text`` of ``text`` with controls escaped (in :data:`ESCAPE_STYLE`) and no markup parsed.

    Args:
        text: Any text.
        style: Style of the plain parts.

    Returns:
        Text whose plain string equals :func:`escape_controls` of ``text``; a word too long for
        its line is folded onto the next, never cut.
    """
    if _plain(text):
        return Text(text, style=style, overflow="fold")  # a long word wraps; it is never cut with an ellipsis
    out = Text(style=style, overflow="fold")
    plain: list[str] = []
    for char in text:
        escape = _escape_of(char)
        if escape is None:
            plain.append(char)
            continue
        if plain:
            out.append("".join(plain))
            plain = []
        out.append(escape, style=ESCAPE_STYLE)
    if plain:
        out.append("".join(plain))
    return out


def first_line(text: str, more: str = "…") -> str:
    """The first line of ``text`` (split on line feeds only), with ``more`` when more lines follow."""
    head, newline, _ = text.partition("\n")
    return head + (more if newline else "")
