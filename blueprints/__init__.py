"""The blueprint domain: Blueprint (8 fields), Review (6 scores), decisions, taxonomy, store."""

from blueprints.actions import OVERRIDABLE, add_note, approve, edit_field, override, reject
from blueprints.blueprint import FIELDS, Blueprint
from blueprints.dimensions import Dimension, Dimensions, load_dimensions
from blueprints.exceptions import (
    BlueprintFileError,
    ConflictError,
    InvalidTransition,
    ReviewActionError,
    TaxonomyError,
)
from blueprints.index import BlueprintIndex, Entry, entry_for
from blueprints.record import BlueprintRecord, Decision, FieldEdit, Flag, Note, Provenance, utcnow
from blueprints.review import DimensionScore, Review, reply_model, triage
from blueprints.similarity import Match, closest, similarity
from blueprints.status import TRANSITIONS, Status, check_transition
from blueprints.store import BlueprintStore, Loaded, dump_record
from blueprints.summary import StatusSummary, summarize
from blueprints.taxonomy import (
    Category,
    Taxonomy,
    TaxonomyExtension,
    add_category,
    cell_order,
    load_extension,
    load_taxonomy,
    taxonomy_for,
    workspace_taxonomy,
)

__all__ = [
    "FIELDS",
    "OVERRIDABLE",
    "TRANSITIONS",
    "Blueprint",
    "BlueprintFileError",
    "BlueprintIndex",
    "BlueprintRecord",
    "BlueprintStore",
    "Category",
    "ConflictError",
    "Decision",
    "Dimension",
    "DimensionScore",
    "Dimensions",
    "Entry",
    "FieldEdit",
    "Flag",
    "InvalidTransition",
    "Loaded",
    "Match",
    "Note",
    "Provenance",
    "Review",
    "ReviewActionError",
    "Status",
    "StatusSummary",
    "Taxonomy",
    "TaxonomyError",
    "TaxonomyExtension",
    "add_category",
    "add_note",
    "approve",
    "cell_order",
    "check_transition",
    "closest",
    "dump_record",
    "edit_field",
    "entry_for",
    "load_dimensions",
    "load_extension",
    "load_taxonomy",
    "override",
    "reject",
    "reply_model",
    "similarity",
    "summarize",
    "taxonomy_for",
    "triage",
    "utcnow",
    "workspace_taxonomy",
]
