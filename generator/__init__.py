"""Stage I proposer: prompts -> batches of 10 validated blueprints."""

from generator.batch import BATCH_SIZE, BatchReport, item_schema, propose_batch
from generator.exceptions import SourcesError
from generator.run import GenerateReport, emptiest_cell, generate
from generator.sources import Incident, default_sources, load_sources, pick_incidents

__all__ = [
    "BATCH_SIZE",
    "BatchReport",
    "GenerateReport",
    "Incident",
    "SourcesError",
    "default_sources",
    "emptiest_cell",
    "generate",
    "item_schema",
    "load_sources",
    "pick_incidents",
    "propose_batch",
]
