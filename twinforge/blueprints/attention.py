"""Pairs that need a person's look, and the sources later stages register for them (``twinforge status``).

The domain never imports a stage, so a stage that knows about pairs needing a look (calibration:
stand-in models, detector / trajectory disagreements) registers a source here when its commands
are added. This module stays light (pydantic only): every ``twinforge`` process registers the
sources while building its command tree (docs/design.md, "Command-line start-up").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

from pydantic import BaseModel

if TYPE_CHECKING:
    from twinforge.core.workspace import Workspace


class Attention(BaseModel):
    """A pair that needs a person's look, reported by a later stage (e.g. calibration).

    Attributes:
        pair: Pair id.
        kind: What kind of problem (``stand-in``, ``disagreement``, ``unreadable`` ...).
        detail: One line saying what was found.
    """

    pair: str
    kind: str
    detail: str


AttentionSource: TypeAlias = Callable[["Workspace"], list[Attention]]
_SOURCES: list[AttentionSource] = []


def add_attention(source: AttentionSource) -> None:
    """Let a later stage add pairs needing a look to ``twinforge status`` (the domain never imports stages)."""
    if source not in _SOURCES:
        _SOURCES.append(source)


def attention_sources() -> tuple[AttentionSource, ...]:
    """The sources registered with :func:`add_attention`, in the order they were added."""
    return tuple(_SOURCES)
