"""Errors of evaluation and the report."""

from __future__ import annotations

from twinforge.core.exceptions import TwinforgeError


class EvaluationError(TwinforgeError):
    """Evaluation cannot start: nothing admitted, an unknown model or harness, or a pair changed since."""
