"""Errors of the Stage I generator."""

from __future__ import annotations

from twinforge.exceptions import TwinforgeError


class SourcesError(TwinforgeError):
    """An incident source file is unreadable or an entry is invalid (the message names file and entry)."""
