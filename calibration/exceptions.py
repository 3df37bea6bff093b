"""Errors of calibration and admission."""

from __future__ import annotations

from twinforge.core.exceptions import TwinforgeError


class CalibrationError(TwinforgeError):
    """Calibration cannot start or a run cannot be executed (the message says which step)."""


class AdmissionError(TwinforgeError):
    """A pair cannot be admitted as asked (not calibrated, failed without a justification, ...)."""
