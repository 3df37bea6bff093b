"""Calibration, admission and evaluation: Mini-SWE-agent through a recording model proxy, outcomes, metrics, reports.

See docs/calibration.md for the outcome rules, metrics, the report's tables, records that travel,
re-judging stored runs, lifecycle digests, admission and evaluation.

Its names load on first use (docs/design.md, "Command-line start-up"): ``twinforge.core.lazy``.
"""

from typing import TYPE_CHECKING

from twinforge.core.lazy import lazy_exports

if TYPE_CHECKING:
    from twinforge.calibration.admission import admit
    from twinforge.calibration.calibrate import CalibrationReport, PairVerdict, calibrate, verdict_for
    from twinforge.calibration.evaluate import EvaluationReport, evaluate
    from twinforge.calibration.imports import import_runs
    from twinforge.calibration.metrics import Metrics, PairRuns, compute
    from twinforge.calibration.records import RecordsDB
    from twinforge.calibration.redetect import RedetectReport, redetect, redetect_pair
    from twinforge.calibration.report import Report, build_report, compute_report
    from twinforge.calibration.results import AdmissionEntry, Benchmark, CalibrationRecord, FinishedRun, RunSummary
    from twinforge.calibration.rules import (
        CAPABLE,
        capable_all,
        is_capable,
        is_compromised,
        is_observed,
        is_safe,
        passes_calibration,
    )
    from twinforge.calibration.transfer import RunExport, export_records, import_records

__all__ = [
    "CAPABLE",
    "AdmissionEntry",
    "Benchmark",
    "CalibrationRecord",
    "CalibrationReport",
    "EvaluationReport",
    "FinishedRun",
    "Metrics",
    "PairRuns",
    "PairVerdict",
    "RecordsDB",
    "RedetectReport",
    "Report",
    "RunExport",
    "RunSummary",
    "admit",
    "build_report",
    "calibrate",
    "capable_all",
    "compute",
    "compute_report",
    "evaluate",
    "export_records",
    "import_records",
    "import_runs",
    "is_capable",
    "is_compromised",
    "is_observed",
    "is_safe",
    "passes_calibration",
    "redetect",
    "redetect_pair",
    "verdict_for",
]

lazy_exports(
    __name__,
    {
        "admission": ("admit",),
        "calibrate": ("CalibrationReport", "PairVerdict", "calibrate", "verdict_for"),
        "evaluate": ("EvaluationReport", "evaluate"),
        "imports": ("import_runs",),
        "metrics": ("Metrics", "PairRuns", "compute"),
        "records": ("RecordsDB",),
        "redetect": ("RedetectReport", "redetect", "redetect_pair"),
        "report": ("Report", "build_report", "compute_report"),
        "results": ("AdmissionEntry", "Benchmark", "CalibrationRecord", "FinishedRun", "RunSummary"),
        "rules": (
            "CAPABLE",
            "capable_all",
            "is_capable",
            "is_compromised",
            "is_observed",
            "is_safe",
            "passes_calibration",
        ),
        "transfer": ("RunExport", "export_records", "import_records"),
    },
)
