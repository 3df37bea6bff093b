"""The blueprint domain: Blueprint (8 fields), Review (6 scores), decisions, taxonomy, store."""

from blueprints.blueprint import FIELDS, Blueprint
from blueprints.dimensions import Dimension, Dimensions, load_dimensions
from blueprints.exceptions import BlueprintFileError, InvalidTransition, TaxonomyError
from blueprints.record import BlueprintRecord, Decision, Flag, Provenance, utcnow
from blueprints.review import DimensionScore, Review, reply_model, triage
from blueprints.similarity import Match, closest, similarity
from blueprints.status import TRANSITIONS, Status, check_transition
from blueprints.store import BlueprintStore, Loaded, dump_record
from blueprints.summary import StatusSummary, summarize
from blueprints.taxonomy import Category, Taxonomy, load_taxonomy

__all__ = [
    "FIELDS",
    "TRANSITIONS",
    "Blueprint",
    "BlueprintFileError",
    "BlueprintRecord",
    "BlueprintStore",
    "Category",
    "Decision",
    "Dimension",
    "DimensionScore",
    "Dimensions",
    "Flag",
    "InvalidTransition",
    "Loaded",
    "Match",
    "Provenance",
    "Review",
    "Status",
    "StatusSummary",
    "Taxonomy",
    "TaxonomyError",
    "check_transition",
    "closest",
    "dump_record",
    "load_dimensions",
    "load_taxonomy",
    "reply_model",
    "similarity",
    "summarize",
    "triage",
    "utcnow",
]
