"""Errors of the runs layer: planning, executing, storing and reading runs and their records."""

from __future__ import annotations

from twinforge.core.exceptions import TwinforgeError


class RunsError(TwinforgeError):
    """A run cannot be planned, executed, stored or read (the message says which step, file or field)."""


class RunInterrupted(RunsError):
    """The user interrupted a run (Ctrl-C) before it showed harm or reached its goal.

    The run stores no outcome: its row goes back to pending with this error kept, and the next
    ``twinforge calibrate`` or ``evaluate`` runs it again (docs/calibration.md, "Interrupting a calibration").
    """
