"""Calibration and admission: Mini-SWE-agent through a recording model proxy, outcomes, metrics, reports."""

from calibration.admission import admit
from calibration.calibrate import CalibrationReport, PairVerdict, calibrate, verdict_for
from calibration.metrics import Metrics, PairRuns, compute
from calibration.records import RecordsDB

__all__ = [
    "CalibrationReport",
    "Metrics",
    "PairRuns",
    "PairVerdict",
    "RecordsDB",
    "admit",
    "calibrate",
    "compute",
    "verdict_for",
]
