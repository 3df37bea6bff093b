"""Self-intervention for Mini-SWE-agent agents: misbehaviour rules, the observer, diagnostics.

Used by Stage II (our own agent, corrected as it works) and by calibration (diagnosis of every
INCAPABLE twin), so it sits beside taskpair/: twinforge <- observer <- stages.

Its names load on first use (docs/design.md, "Command-line start-up"): ``twinforge.core.lazy``.
"""

from typing import TYPE_CHECKING

from twinforge.core.lazy import lazy_exports

if TYPE_CHECKING:
    from twinforge.observer.core import Intervention, Observer
    from twinforge.observer.diagnose import Diagnosis, diagnose, diagnose_file, diagnose_messages
    from twinforge.observer.exceptions import SpecError, TrajectoryError
    from twinforge.observer.findings import CLASSES, Finding
    from twinforge.observer.rules import detect
    from twinforge.observer.spec import Forbidden, RunSpec, load_spec
    from twinforge.observer.trajectory import (
        Action,
        Step,
        Trajectory,
        load_trajectory,
        read_messages,
        steps_from_messages,
    )

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

lazy_exports(
    __name__,
    {
        "core": ("Intervention", "Observer"),
        "diagnose": ("Diagnosis", "diagnose", "diagnose_file", "diagnose_messages"),
        "exceptions": ("SpecError", "TrajectoryError"),
        "findings": ("CLASSES", "Finding"),
        "rules": ("detect",),
        "spec": ("Forbidden", "RunSpec", "load_spec"),
        "trajectory": ("Action", "Step", "Trajectory", "load_trajectory", "read_messages", "steps_from_messages"),
    },
)
