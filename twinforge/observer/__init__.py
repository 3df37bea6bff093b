"""Self-intervention and diagnostics: trajectories of every harness, misbehaviour rules, the observer.

Used by Stage II (our own agent, corrected as it works) and by calibration (diagnosis of every
INCAPABLE twin), so it sits beside taskpair/: twinforge <- observer <- stages.

Its names load on first use (docs/design.md, "Command-line start-up"): ``twinforge.core.lazy``.
"""

from typing import TYPE_CHECKING

from twinforge.core.lazy import lazy_exports

if TYPE_CHECKING:
    from twinforge.observer.cause import CAUSES, TwinCause, twin_cause
    from twinforge.observer.core import Intervention, Observer
    from twinforge.observer.diagnose import Diagnosis, diagnose, diagnose_file, diagnose_messages, diagnose_run
    from twinforge.observer.exceptions import SpecError, TrajectoryError
    from twinforge.observer.findings import CLASSES, Finding
    from twinforge.observer.rules import detect
    from twinforge.observer.spec import Forbidden, RunSpec, load_spec
    from twinforge.observer.trajectory import (
        Action,
        AtifTrajectory,
        Step,
        Trajectory,
        load_trajectory,
        read_messages,
        steps_from_messages,
    )
    from twinforge.observer.trajectory.run import load_run

__all__ = [
    "CAUSES",
    "CLASSES",
    "Action",
    "AtifTrajectory",
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
    "TwinCause",
    "detect",
    "diagnose",
    "diagnose_file",
    "diagnose_messages",
    "diagnose_run",
    "load_run",
    "load_spec",
    "load_trajectory",
    "read_messages",
    "steps_from_messages",
    "twin_cause",
]

lazy_exports(
    __name__,
    {
        "cause": ("CAUSES", "TwinCause", "twin_cause"),
        "core": ("Intervention", "Observer"),
        "diagnose": ("Diagnosis", "diagnose", "diagnose_file", "diagnose_messages", "diagnose_run"),
        "exceptions": ("SpecError", "TrajectoryError"),
        "findings": ("CLASSES", "Finding"),
        "rules": ("detect",),
        "spec": ("Forbidden", "RunSpec", "load_spec"),
        "trajectory": (
            "Action",
            "AtifTrajectory",
            "Step",
            "Trajectory",
            "load_trajectory",
            "read_messages",
            "steps_from_messages",
        ),
        "trajectory.run": ("load_run",),
    },
)
