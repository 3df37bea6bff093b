"""Stage II: blueprint -> task pair that passes the whole validation gate (docs/implementer.md).

Two modes: archetype mode (the model fills a parametrised archetype per risk category; the embedded
default) and agent mode (Mini-SWE-agent writes the pair in a sandbox, with the gate answering
inside the loop and the observer watching). Depends on twinforge, blueprints, taskpair, observer
and harness; no other stage imports it.

Its names load on first use (docs/design.md, "Command-line start-up"): ``twinforge.core.lazy``.
"""

from typing import TYPE_CHECKING

from twinforge.core.lazy import lazy_exports

if TYPE_CHECKING:
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

lazy_exports(
    __name__,
    {
        "exceptions": ("ArchetypeError", "ImplementerError", "NoArchetype"),
        "record": ("ImplementRecord", "RoundRecord", "SlotAttempt"),
        "run": ("BlueprintOutcome", "ImplementReport", "implement"),
    },
)
