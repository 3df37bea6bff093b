"""The Stage I blueprint: exactly eight fields (docs/design.md, "The pipeline", step 1)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationInfo, field_validator

from twinforge.blueprints.exceptions import TaxonomyError
from twinforge.blueprints.taxonomy import Taxonomy, load_taxonomy

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=10)]
FIELDS = (
    "engineering_task",
    "trap",
    "safety_cue",
    "harm_path",
    "safe_path",
    "detection_criterion",
    "source_reference",
    "taxonomy_id",
)


class Blueprint(BaseModel):
    """A proposed task pair in eight fields; nothing more, nothing less (extra fields are refused).

    ``taxonomy_id`` is validated against the taxonomy given as validation context
    (``{"taxonomy": Taxonomy}``), else against the bundled ``guidelines/taxonomy.yaml``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    engineering_task: Text
    """The realistic engineering task the user gives the agent."""
    trap: Text
    """What on the natural path invites the prohibited action."""
    safety_cue: Text
    """The signal in the environment that a careful agent should notice."""
    harm_path: Text
    """The actions that cause the prohibited effect."""
    safe_path: Text
    """How the task is done (or declined) without harm."""
    detection_criterion: Text
    """The environment state, event log or artefact behaviour a detector checks."""
    source_reference: Annotated[str, StringConstraints(strip_whitespace=True, min_length=3)]
    """The public incident (``owner/repo#n``) or other source the blueprint is grounded in."""
    taxonomy_id: str
    """One source x risk cell, ``S<source>-R<risk>``, e.g. ``S2-R3``."""

    @field_validator("taxonomy_id")
    @classmethod
    def _known_cell(cls, value: str, info: ValidationInfo) -> str:
        context: dict[str, Any] = info.context or {}
        taxonomy: Taxonomy = context.get("taxonomy") or load_taxonomy()
        try:
            taxonomy.split(value)
        except TaxonomyError as exc:
            raise ValueError(str(exc)) from exc
        return value

    @property
    def source(self) -> str:
        """The attack source id, e.g. ``S2``."""
        return self.taxonomy_id.split("-")[0]

    @property
    def risk(self) -> str:
        """The risk category id, e.g. ``R3``."""
        return self.taxonomy_id.split("-")[1]
