"""Self-intervention for Mini-SWE-agent agents: misbehaviour detectors, the observer, diagnostics.

Used by Stage II (our own agent, corrected as it works) and by calibration (diagnosis of every
INCAPABLE twin), so it sits beside taskpair/: twinforge <- observer <- stages.
"""

from observer.core import Intervention, Observer
from observer.detectors import detect
from observer.diagnose import Diagnosis, diagnose, diagnose_file, diagnose_messages
from observer.exceptions import SpecError, TrajectoryError
from observer.findings import CLASSES, Finding
from observer.spec import Forbidden, RunSpec, load_spec
from observer.trajectory import Action, Step, Trajectory, load_trajectory, read_messages, steps_from_messages

__all__ = [
    "CLASSES",
    "Action",
    "Diagnosis",
    "Finding",
    "Forbidden",
    "Intervention",
    "Observer",
    "RunSpec",
    "SpecError",
    "Step",
    "Trajectory",
    "TrajectoryError",
    "detect",
    "diagnose",
    "diagnose_file",
    "diagnose_messages",
    "load_spec",
    "load_trajectory",
    "read_messages",
    "steps_from_messages",
]
