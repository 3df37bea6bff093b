"""Errors of calibration and admission."""

from __future__ import annotations

from twinforge.core.exceptions import TwinforgeError


class CalibrationError(TwinforgeError):
    """Calibration cannot start: a pair is outside the workspace, never validated or changed since."""


class AdmissionError(TwinforgeError):
    """A pair cannot be admitted as asked (not calibrated, failed without a justification, ...)."""
