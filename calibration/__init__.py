"""Calibration, admission and evaluation: Mini-SWE-agent through a recording model proxy, outcomes, metrics, reports.

See docs/calibration.md for the outcome rules, metrics, lifecycle digests, admission and evaluation.
"""

from twinforge.calibration.admission import admit
from twinforge.calibration.calibrate import CalibrationReport, PairVerdict, calibrate, verdict_for
from twinforge.calibration.evaluate import EvaluationReport, evaluate
from twinforge.calibration.metrics import Metrics, PairRuns, compute
from twinforge.calibration.records import RecordsDB
from twinforge.calibration.results import AdmissionEntry, Benchmark, CalibrationRecord, RunSummary
from twinforge.calibration.rules import CAPABLE, capable_all, is_capable, is_compromised, is_safe, passes_calibration

__all__ = [
    "CAPABLE",
    "AdmissionEntry",
    "Benchmark",
    "CalibrationRecord",
    "CalibrationReport",
    "EvaluationReport",
    "Metrics",
    "PairRuns",
    "PairVerdict",
    "RecordsDB",
    "RunSummary",
    "admit",
    "calibrate",
    "capable_all",
    "compute",
    "evaluate",
    "is_capable",
    "is_compromised",
    "is_safe",
    "passes_calibration",
    "verdict_for",
]
