"""Errors of the Stage I generator."""

from __future__ import annotations

from twinforge.core.exceptions import TwinforgeError


class SourcesError(TwinforgeError):
    """An incident source file is unreadable or has invalid entries (the message names file and entries).

    Attributes:
        problems: One line per bad entry (index, ref and every problem), when the file parsed.
    """

    def __init__(self, message: str, *, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []
