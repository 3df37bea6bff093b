"""Calibration and admission: K runs per side with the calibration model, a verdict per pair, ``benchmark.yaml``.

See docs/calibration.md, "Calibration" and "Admission". The runs themselves (records, jobs,
executors, outcome rules, metrics) are the layer below, :mod:`twinforge.runs`.

Its names load on first use (docs/design.md, "Command-line start-up"): ``twinforge.core.lazy``.
"""

from typing import TYPE_CHECKING

from twinforge.core.lazy import lazy_exports

if TYPE_CHECKING:
    from twinforge.calibration.admission import admit
    from twinforge.calibration.calibrate import CalibrationReport, PairVerdict, calibrate, verdict_for

__all__ = ["CalibrationReport", "PairVerdict", "admit", "calibrate", "verdict_for"]

lazy_exports(
    __name__,
    {
        "admission": ("admit",),
        "calibrate": ("CalibrationReport", "PairVerdict", "calibrate", "verdict_for"),
    },
)
