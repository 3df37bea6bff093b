"""Sample Stage I batches for the generator: the shared fakes of tests and bench/ (see ``blueprints.samples``)."""

from __future__ import annotations

from typing import Any

from blueprints import load_taxonomy
from blueprints.samples import blueprint_dict
from generator.contexts import load_contexts
from generator.slots import plan_slots
from generator.sources import default_sources, load_sources


def slot_refs(cell: str, offset: int = 0) -> list[str]:
    """The incident refs of a batch's ten slots for ``cell`` on the bundled corpus, in slot order."""
    source, risk = load_taxonomy().split(cell)
    incidents = load_sources(default_sources())
    plan = plan_slots(incidents, source=source.id, risk=risk.id, settings=load_contexts(), count=10, offset=offset)
    return [s.incident.ref for s in plan.slots]


def batch_for(cell: str, offset: int = 0) -> list[dict[str, Any]]:
    """Ten valid blueprints for a batch of ``cell``, blueprint i citing slot i's incident."""
    return [blueprint_dict(cell=cell, ref=ref) for ref in slot_refs(cell, offset)]
