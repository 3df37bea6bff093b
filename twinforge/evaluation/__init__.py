"""Evaluation and the report: admitted pairs run on the model x harness grid; the study's tables.

See docs/calibration.md, "Evaluation" and "Report". Runs, records, outcome rules and metrics are
the layer below, :mod:`twinforge.runs`.

Its names load on first use (docs/design.md, "Command-line start-up"): ``twinforge.core.lazy``.
"""

from typing import TYPE_CHECKING

from twinforge.core.lazy import lazy_exports

if TYPE_CHECKING:
    from twinforge.evaluation.cells import EvaluationReport
    from twinforge.evaluation.evaluate import evaluate
    from twinforge.evaluation.grid import GridReport, evaluate_grid
    from twinforge.evaluation.model import Report
    from twinforge.evaluation.report import build_report, compute_report

__all__ = ["EvaluationReport", "GridReport", "Report", "build_report", "compute_report", "evaluate", "evaluate_grid"]

lazy_exports(
    __name__,
    {
        "cells": ("EvaluationReport",),
        "evaluate": ("evaluate",),
        "grid": ("GridReport", "evaluate_grid"),
        "model": ("Report",),
        "report": ("build_report", "compute_report"),
    },
)
