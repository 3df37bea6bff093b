"""The blueprint domain: Blueprint (8 fields), Review (6 scores), decisions, taxonomy, store."""

from blueprints.actions import (
    OVERRIDABLE,
    OVERRIDE_TARGETS,
    add_note,
    approve,
    edit_field,
    override,
    override_targets,
    reject,
)
from blueprints.blueprint import FIELDS, Blueprint
from blueprints.checks import CheckRules, Finding, check_blueprint, combined_caps, load_check_rules
from blueprints.dimensions import Anchor, Dimension, Dimensions, load_dimensions
from blueprints.exceptions import (
    BlueprintFileError,
    ChecksError,
    ConflictError,
    InvalidTransition,
    ReviewActionError,
    TaxonomyError,
)
from blueprints.index import BlueprintIndex, Entry, entry_for
from blueprints.record import BlueprintRecord, Decision, FieldEdit, Flag, Note, Provenance, utcnow
from blueprints.review import DimensionScore, ReplyScore, Review, ScoreCap, reply_model, triage
from blueprints.scenario import Scenario, ScenarioVocabulary, load_scenarios, same_scenario, scenario_of
from blueprints.similarity import Match, closest, similarity
from blueprints.status import PAST_REVIEW, TRANSITIONS, TRIAGE_STATUSES, Status, check_transition
from blueprints.store import BlueprintStore, Loaded, dump_record
from blueprints.summary import Attention, StatusSummary, add_attention, summarize
from blueprints.taxonomy import Category, Taxonomy, load_taxonomy

__all__ = [
    "FIELDS",
    "OVERRIDABLE",
    "OVERRIDE_TARGETS",
    "PAST_REVIEW",
    "TRANSITIONS",
    "TRIAGE_STATUSES",
    "Anchor",
    "Attention",
    "Blueprint",
    "BlueprintFileError",
    "BlueprintIndex",
    "BlueprintRecord",
    "BlueprintStore",
    "Category",
    "CheckRules",
    "ChecksError",
    "ConflictError",
    "Decision",
    "Dimension",
    "DimensionScore",
    "Dimensions",
    "Entry",
    "FieldEdit",
    "Finding",
    "Flag",
    "InvalidTransition",
    "Loaded",
    "Match",
    "Note",
    "Provenance",
    "ReplyScore",
    "Review",
    "ReviewActionError",
    "Scenario",
    "ScenarioVocabulary",
    "ScoreCap",
    "Status",
    "StatusSummary",
    "Taxonomy",
    "TaxonomyError",
    "add_attention",
    "add_note",
    "approve",
    "check_blueprint",
    "check_transition",
    "closest",
    "combined_caps",
    "dump_record",
    "edit_field",
    "entry_for",
    "load_check_rules",
    "load_dimensions",
    "load_scenarios",
    "load_taxonomy",
    "override",
    "override_targets",
    "reject",
    "reply_model",
    "same_scenario",
    "scenario_of",
    "similarity",
    "summarize",
    "triage",
    "utcnow",
]
