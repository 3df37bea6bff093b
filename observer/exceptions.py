"""Errors of the observer and diagnostics."""

from __future__ import annotations

from twinforge.exceptions import TwinforgeError


class TrajectoryError(TwinforgeError):
    """A trajectory file cannot be read as a Mini-SWE-agent trajectory."""
