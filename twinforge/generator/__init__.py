"""Stage I proposer: prompts -> batches of 10 validated blueprints, each slot grounded in its own incident.

Its names load on first use (docs/design.md, "Command-line start-up"): ``twinforge.core.lazy``.
"""

from typing import TYPE_CHECKING

from twinforge.core.lazy import lazy_exports

if TYPE_CHECKING:
    from twinforge.generator.batch import BATCH_SIZE, propose_batch
    from twinforge.generator.examples import WorkedExample, examples_for, load_examples
    from twinforge.generator.exceptions import SourcesError
    from twinforge.generator.outcome import BatchReport
    from twinforge.generator.request import BatchRequest, SourcesInfo, slot_schema
    from twinforge.generator.run import THIN_CELL, GenerateReport, emptiest_cell, generate
    from twinforge.generator.slotchecks import SlotJudge, copies_example
    from twinforge.generator.slots import Slot, SlotPlan, order_incidents, plan_slots
    from twinforge.generator.sources import (
        Incident,
        cell_counts,
        default_sources,
        load_sources,
        sources_digest,
        sources_label,
        thin_cells,
    )

__all__ = [
    "BATCH_SIZE",
    "THIN_CELL",
    "BatchReport",
    "BatchRequest",
    "GenerateReport",
    "Incident",
    "Slot",
    "SlotJudge",
    "SlotPlan",
    "SourcesError",
    "SourcesInfo",
    "WorkedExample",
    "cell_counts",
    "copies_example",
    "default_sources",
    "emptiest_cell",
    "examples_for",
    "generate",
    "load_examples",
    "load_sources",
    "order_incidents",
    "plan_slots",
    "propose_batch",
    "slot_schema",
    "sources_digest",
    "sources_label",
    "thin_cells",
]

lazy_exports(
    __name__,
    {
        "batch": ("BATCH_SIZE", "propose_batch"),
        "outcome": ("BatchReport",),
        "request": ("BatchRequest", "SourcesInfo", "slot_schema"),
        "examples": ("WorkedExample", "examples_for", "load_examples"),
        "exceptions": ("SourcesError",),
        "run": ("THIN_CELL", "GenerateReport", "emptiest_cell", "generate"),
        "slotchecks": ("SlotJudge", "copies_example"),
        "slots": ("Slot", "SlotPlan", "order_incidents", "plan_slots"),
        "sources": (
            "Incident",
            "cell_counts",
            "default_sources",
            "load_sources",
            "sources_digest",
            "sources_label",
            "thin_cells",
        ),
    },
)
