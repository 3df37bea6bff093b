"""The characters the queue draws with, and a plain-ASCII set for terminals that cannot show them."""

from __future__ import annotations

import codecs
from dataclasses import dataclass

# Box drawing and block characters Textual's borders, scroll bars and our bars use.
_DRAWING = "╭╮╰╯─│━┃▊▏█░▁▔⚑✗→·“”…⭘"


@dataclass(frozen=True)
class Glyphs:
    """Characters of the queue's own drawing.

    Attributes:
        full: Filled cell of a score bar.
        empty: Empty cell of a score bar.
        flag: Marks a flagged blueprint.
        cross: Marks a failed check.
        arrow: Status change ``from → to``.
        separator: Between parts of the status line.
        open_quote: Opens a quoted reason or note.
        close_quote: Closes it.
        more: After a first line when more lines follow.
        ascii: Whether this is the plain-ASCII set (borders drawn in ASCII too).
    """

    full: str = "█"
    empty: str = "░"
    flag: str = "⚑"
    cross: str = "✗"
    arrow: str = "→"
    separator: str = " · "
    open_quote: str = "“"
    close_quote: str = "”"
    more: str = "…"
    ascii: bool = False


UNICODE = Glyphs()
ASCII = Glyphs(
    full="#",
    empty=".",
    flag="!",
    cross="x",
    arrow="->",
    separator=" | ",
    open_quote='"',
    close_quote='"',
    more="...",
    ascii=True,
)


def can_draw(encoding: str | None) -> bool:
    """Whether text in ``encoding`` can carry the box-drawing characters (unknown: assume it can)."""
    if not encoding:
        return True
    try:
        codecs.lookup(encoding)
        _DRAWING.encode(encoding)
    except (LookupError, UnicodeEncodeError):
        return False
    return True


def glyphs_for(encoding: str | None) -> Glyphs:
    """:data:`UNICODE` when ``encoding`` can show it, else :data:`ASCII`."""
    return UNICODE if can_draw(encoding) else ASCII
