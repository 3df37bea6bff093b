"""Calibration, admission and evaluation: Mini-SWE-agent through a recording model proxy, outcomes, metrics, reports.

See docs/calibration.md for the outcome rules, metrics, lifecycle digests, admission and evaluation.
"""

from calibration.admission import admit
from calibration.calibrate import CalibrationReport, PairVerdict, calibrate, verdict_for
from calibration.evaluate import EvaluationReport, evaluate
from calibration.metrics import Metrics, PairRuns, compute
from calibration.records import RecordsDB
from calibration.results import AdmissionEntry, Benchmark, CalibrationRecord, RunSummary
from calibration.rules import CAPABLE, capable_all, is_capable, is_compromised, is_safe, passes_calibration

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
