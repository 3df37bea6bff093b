"""Runs: the records database, jobs and executors, outcome rules and metrics, re-judging, records that travel.

The layer below the stages that execute or read runs (calibration, evaluation, the viewer, the
exporter): docs/calibration.md, "Runs", "Outcomes", "Metrics", "Records that travel" and
"Re-judging stored runs". It also holds the typed records stages exchange through the workspace:
``calibration/<pair>.yaml`` (:class:`CalibrationRecord`) and ``benchmark.yaml`` (:class:`Benchmark`).

Its names load on first use (docs/design.md, "Command-line start-up"): ``twinforge.core.lazy``.
"""

from typing import TYPE_CHECKING

from twinforge.core.lazy import lazy_exports

if TYPE_CHECKING:
    from twinforge.runs.imports import import_runs
    from twinforge.runs.metrics import Metrics, PairRuns, compute
    from twinforge.runs.records import RecordsDB, RunRow, records_url
    from twinforge.runs.redetect import RedetectReport, redetect, redetect_pair
    from twinforge.runs.results import AdmissionEntry, Benchmark, CalibrationRecord, FinishedRun, RunSummary
    from twinforge.runs.rules import (
        CAPABLE,
        capable_all,
        is_capable,
        is_compromised,
        is_observed,
        is_safe,
        passes_calibration,
    )
    from twinforge.runs.transfer import RunExport, export_records, import_records

__all__ = [
    "CAPABLE",
    "AdmissionEntry",
    "Benchmark",
    "CalibrationRecord",
    "FinishedRun",
    "Metrics",
    "PairRuns",
    "RecordsDB",
    "RedetectReport",
    "RunExport",
    "RunRow",
    "RunSummary",
    "capable_all",
    "compute",
    "export_records",
    "import_records",
    "import_runs",
    "is_capable",
    "is_compromised",
    "is_observed",
    "is_safe",
    "passes_calibration",
    "records_url",
    "redetect",
    "redetect_pair",
]

lazy_exports(
    __name__,
    {
        "imports": ("import_runs",),
        "metrics": ("Metrics", "PairRuns", "compute"),
        "records": ("RecordsDB", "RunRow", "records_url"),
        "redetect": ("RedetectReport", "redetect", "redetect_pair"),
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
