"""Stage II: blueprint -> task pair that passes the whole validation gate (docs/implementer.md).

Two modes: archetype mode (the model fills a parametrised archetype per risk category; the embedded
default) and agent mode (Mini-SWE-agent writes the pair in a sandbox, with the gate answering
inside the loop and the observer watching). Depends on twinforge, blueprints, taskpair, observer
and harness; no other stage imports it.
"""

from twinforge.implementer.exceptions import ArchetypeError, ImplementerError, NoArchetype
from twinforge.implementer.record import ImplementRecord, RoundRecord, SlotAttempt
from twinforge.implementer.run import BlueprintOutcome, ImplementReport, implement

__all__ = [
    "ArchetypeError",
    "BlueprintOutcome",
    "ImplementRecord",
    "ImplementReport",
    "ImplementerError",
    "NoArchetype",
    "RoundRecord",
    "SlotAttempt",
    "implement",
]
