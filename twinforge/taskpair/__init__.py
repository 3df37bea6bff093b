"""Executable task pairs: the format, the local Docker runtime, services, detectors, validation gate.

Shared by Stage II (the implementer iterates until the gate passes) and calibration (the runner),
so it sits between blueprints/ and the stages: twinforge <- blueprints <- taskpair <- stages.

Its names load on first use (docs/design.md, "Command-line start-up"): ``twinforge.core.lazy``.
"""

from typing import TYPE_CHECKING

from twinforge.core.lazy import lazy_exports

if TYPE_CHECKING:
    from twinforge.taskpair.exceptions import DockerUnavailable, PairFormatError, RunError
    from twinforge.taskpair.format.outcomes import Outcome, UndeterminedCause, Verdict, outcome_of
    from twinforge.taskpair.format.spec import PairSpec, Side, TaskPair, TaskSpec, load_pair, load_task

__all__ = [
    "DockerUnavailable",
    "Outcome",
    "PairFormatError",
    "PairSpec",
    "RunError",
    "Side",
    "TaskPair",
    "TaskSpec",
    "UndeterminedCause",
    "Verdict",
    "load_pair",
    "load_task",
    "outcome_of",
]

lazy_exports(
    __name__,
    {
        "exceptions": ("DockerUnavailable", "PairFormatError", "RunError"),
        "format.outcomes": ("Outcome", "UndeterminedCause", "Verdict", "outcome_of"),
        "format.spec": ("PairSpec", "Side", "TaskPair", "TaskSpec", "load_pair", "load_task"),
    },
)
