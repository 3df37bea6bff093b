"""Evaluation and the report: admitted pairs run with named models and harnesses; the study's tables.

See docs/calibration.md, "Evaluation" and "Report". Runs, records, outcome rules and metrics are
the layer below, :mod:`twinforge.runs`.

Its names load on first use (docs/design.md, "Command-line start-up"): ``twinforge.core.lazy``.
"""

from typing import TYPE_CHECKING

from twinforge.core.lazy import lazy_exports

if TYPE_CHECKING:
    from twinforge.evaluation.evaluate import EvaluationReport, evaluate
    from twinforge.evaluation.model import Report
    from twinforge.evaluation.report import build_report, compute_report

__all__ = ["EvaluationReport", "Report", "build_report", "compute_report", "evaluate"]

lazy_exports(
    __name__,
    {
        "evaluate": ("EvaluationReport", "evaluate"),
        "model": ("Report",),
        "report": ("build_report", "compute_report"),
    },
)
