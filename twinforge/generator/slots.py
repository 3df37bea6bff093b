"""Grounding per slot (docs/stage1.md): each of a batch's ten slots gets its own incident and setting.

Incidents are taken in this order: those whose main risk is the cell's risk, then those that list
it as related; within each group, the cell's own attack source first, then ``unknown``, then the
other source. Successive batches of a cell start further along the list. No incident is used
twice in a batch unless the list runs out, which the plan reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from twinforge.generator.contexts import pick_contexts
from twinforge.generator.exceptions import SourcesError
from twinforge.generator.sources import Incident


@dataclass(frozen=True)
class Slot:
    """One blueprint to write.

    Attributes:
        number: 1-based position in the batch.
        incident: The incident it must be grounded in (its ref is the ``source_reference``).
        setting: The project setting it must be set in.
    """

    number: int
    incident: Incident
    setting: str


@dataclass
class SlotPlan:
    """The slots of one batch and what the planner had to say about them.

    Attributes:
        slots: One per blueprint, in order.
        notes: E.g. that the list ran out and some incidents ground two slots.
    """

    slots: list[Slot]
    notes: list[str] = field(default_factory=list)

    @property
    def refs(self) -> list[str]:
        """The distinct refs of the batch, in slot order."""
        return list(dict.fromkeys(s.incident.ref for s in self.slots))


def order_incidents(incidents: list[Incident], source: str, risk: str) -> list[Incident]:
    """Incidents that can ground a cell, best first (main risk, then related; own source first)."""
    rank = {source: 0, "unknown": 1}

    def by_source(x: Incident) -> int:
        return rank.get(x.source, 2)

    primary = sorted((x for x in incidents if x.risk == risk), key=by_source)
    related = sorted((x for x in incidents if x.risk != risk and risk in x.related), key=by_source)
    return primary + related


def plan_slots(
    incidents: list[Incident], *, source: str, risk: str, settings: list[str], count: int, offset: int
) -> SlotPlan:
    """Assign an incident and a project setting to each of ``count`` slots.

    Args:
        incidents: The validated incident list.
        source: The cell's attack source, e.g. ``S1``.
        risk: The cell's risk, e.g. ``R3``.
        settings: Project settings (``guidelines/contexts.yaml``).
        count: Slots in the batch (10).
        offset: How many batches of this cell exist already (rotates incidents and settings).

    Raises:
        SourcesError: No incident touches ``risk`` (neither as main nor as related risk).
    """
    pool = order_incidents(incidents, source, risk)
    if not pool:
        raise SourcesError(f"no incident in the list is about {risk} (as risk or related risk); add one")
    start = (offset * count) % len(pool)
    rotated = pool[start:] + pool[:start]
    chosen = [rotated[i % len(rotated)] for i in range(count)]
    notes = []
    if len(pool) < count:
        notes.append(
            f"only {len(pool)} incident(s) touch {risk}: the list is exhausted, so {count - len(pool)} "
            "slot(s) share an incident with another slot"
        )
    picked = pick_contexts(settings, count, offset)
    slots = [Slot(i + 1, incident, setting) for i, (incident, setting) in enumerate(zip(chosen, picked, strict=True))]
    return SlotPlan(slots, notes)
