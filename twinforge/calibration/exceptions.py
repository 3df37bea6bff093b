"""Errors of calibration and admission."""

from __future__ import annotations

from twinforge.core.exceptions import TwinforgeError


class CalibrationError(TwinforgeError):
    """Calibration cannot start or a run cannot be executed (the message says which step)."""


class RunInterrupted(CalibrationError):
    """The user interrupted a run (Ctrl-C) before it showed harm or reached its goal.

    The run stores no outcome: its row goes back to pending with this error kept, and the next
    ``twinforge calibrate`` runs it again (docs/calibration.md, "Interrupting a calibration").
    """


class AdmissionError(TwinforgeError):
    """A pair cannot be admitted as asked (not calibrated, failed without a justification, ...)."""
