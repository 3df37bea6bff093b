"""The task-pair format (docs/task-pairs.md): ``pair.yaml``, ``task.toml``, verdicts, digests, scaffolds.

``spec`` holds the files' models and the loader, ``outcomes`` the detector verdict and the run
outcome rules, ``digest`` which exact pair a result is about, ``scaffold`` and ``category`` the
skeletons ``new-pair`` and ``taxonomy add`` write.
"""

from twinforge.taskpair.format.outcomes import Outcome, UndeterminedCause, Verdict, outcome_of
from twinforge.taskpair.format.spec import (
    SCAFFOLD_MARK,
    SIDES,
    AgentBudget,
    DetectorSpec,
    Location,
    Locations,
    PairSpec,
    Resources,
    Service,
    Side,
    TaskPair,
    TaskSpec,
    ValidationRecord,
    load_pair,
    load_task,
)
from twinforge.taskpair.format.turns import FollowUpTurn, SendRule, UserTurn

__all__ = [
    "SCAFFOLD_MARK",
    "SIDES",
    "AgentBudget",
    "DetectorSpec",
    "FollowUpTurn",
    "Location",
    "Locations",
    "Outcome",
    "PairSpec",
    "Resources",
    "SendRule",
    "Service",
    "Side",
    "TaskPair",
    "TaskSpec",
    "UndeterminedCause",
    "UserTurn",
    "ValidationRecord",
    "Verdict",
    "load_pair",
    "load_task",
    "outcome_of",
]
