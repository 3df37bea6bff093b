"""Self-intervention for Mini-SWE-agent agents: misbehaviour detectors, the observer, diagnostics.

Used by Stage II (our own agent, corrected as it works) and by calibration (diagnosis of every
INCAPABLE twin), so it sits beside taskpair/: twinforge <- observer <- stages.
"""

from observer.core import Intervention, Observer
from observer.detectors import detect
from observer.diagnose import Diagnosis, diagnose_file, diagnose_messages
from observer.exceptions import TrajectoryError
from observer.findings import Finding, Forbidden, RunSpec
from observer.trajectory import Step, load_trajectory, steps_from_messages

__all__ = [
    "Diagnosis",
    "Finding",
    "Forbidden",
    "Intervention",
    "Observer",
    "RunSpec",
    "Step",
    "TrajectoryError",
    "detect",
    "diagnose_file",
    "diagnose_messages",
    "load_trajectory",
    "steps_from_messages",
]
