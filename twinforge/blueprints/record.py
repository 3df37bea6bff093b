"""A blueprint file: the eight fields plus provenance, review, decisions and flags."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from twinforge.blueprints.blueprint import Blueprint
from twinforge.blueprints.findings import Finding
from twinforge.blueprints.review import Review
from twinforge.blueprints.status import Status, check_transition
from twinforge.blueprints.turns import FollowUp


def utcnow() -> datetime:
    """Current time in UTC, second precision (what the files record)."""
    return datetime.now(UTC).replace(microsecond=0)


class Provenance(BaseModel):
    """Where a blueprint came from.

    Attributes:
        batch: The generation batch id.
        model: ``provider:model`` of the generator.
        prompt_version: Version id of the generation prompt (``generate@<hash>``).
        sources: The incident list that grounded it: ``bundled:...``, a path relative to the
            workspace, or ``<name> (outside the workspace)`` (never the folder the command ran in).
        sources_digest: ``sha256:<hex>`` of that list's bytes.
        created_at: When it was generated (UTC).
        slot: Its slot in the batch (1-10); the slot's incident is its ``source_reference``.
        setting: The project setting its slot assigned.
        attempt: The model call of the batch on which it first passed validation and the checks
            (1: the first reply; higher: after re-asks).
    """

    model_config = ConfigDict(extra="forbid")

    batch: str
    model: str
    prompt_version: str
    sources: str
    created_at: datetime
    sources_digest: str | None = None
    slot: int | None = None
    setting: str | None = None
    attempt: int | None = None


class Decision(BaseModel):
    """One status change, with who, when and why (the audit trail beside git).

    Attributes:
        action: ``triage`` (reviewer model), ``approve``, ``reject``, ``override`` ...
        by: Who decided: a person, or ``reviewer:<model>``.
        at: When (UTC).
        from_status: Status before.
        to_status: Status after.
        reason: Why; required for rejections and overrides.
        overrode: For a person's approval: the doubts of the checks (``rule (field)``) shown with the
            blueprint when it was approved, which the approval overrode (docs/stage1.md).
    """

    model_config = ConfigDict(extra="forbid")

    action: str
    by: str
    at: datetime
    from_status: Status
    to_status: Status
    reason: str | None = None
    overrode: list[str] | None = None


class Flag(BaseModel):
    """A warning attached to a blueprint: it may repeat a stored one of its cell (a doubt).

    Attributes:
        kind: ``same_scenario`` (the same project kind and harmful action in other words), or
            ``near_duplicate`` on blueprints stored before near-duplicates were refused.
        of: The other blueprint's id.
        similarity: 0-100.
        detail: Human-readable explanation.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["near_duplicate", "same_scenario"]
    of: str
    similarity: float
    detail: str


class Note(BaseModel):
    """A reviewer's free-text note.

    Attributes:
        by: Who wrote it.
        at: When (UTC).
        text: The note.
    """

    model_config = ConfigDict(extra="forbid")

    by: str
    at: datetime
    text: str


class FieldEdit(BaseModel):
    """One in-place edit of a blueprint field; the old value is kept here (never lost).

    Attributes:
        field: One of the eight blueprint fields.
        old: Value before the edit.
        new: Value after the edit.
        by: Who edited.
        at: When (UTC).
    """

    model_config = ConfigDict(extra="forbid")

    field: str
    old: str
    new: str
    by: str
    at: datetime


class BlueprintRecord(BaseModel):
    """The content of ``blueprints/<id>.yaml``.

    ``doubts`` are the checks' doubts when it was stored (a generated one: after its last re-ask);
    the reviewer and the queue read today's checks again.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    schema_version: Literal[1] = 1
    id: str
    status: Status = Status.PROPOSED
    blueprint: Blueprint
    provenance: Provenance
    review: Review | None = None
    decisions: list[Decision] = Field(default_factory=list)
    flags: list[Flag] = Field(default_factory=list)
    notes: list[Note] = Field(default_factory=list)
    edits: list[FieldEdit] = Field(default_factory=list)
    doubts: list[Finding] = Field(default_factory=list)
    follow_ups: list[FollowUp] = Field(default_factory=list)
    """A multi-turn blueprint's later user turns, beside the eight fields (docs/stage1.md,
    "Multi-turn blueprints"); empty for a one-turn blueprint."""

    def move(
        self, target: Status, *, action: str, by: str, reason: str | None = None, overrode: list[str] | None = None
    ) -> Decision:
        """Change status along the lifecycle and record the decision.

        Raises:
            InvalidTransition: The lifecycle does not allow ``status -> target``.
        """
        check_transition(self.id, self.status, target)
        decision = Decision(
            action=action,
            by=by,
            at=utcnow(),
            from_status=self.status,
            to_status=target,
            reason=reason,
            overrode=overrode or None,
        )
        self.decisions = [*self.decisions, decision]
        self.status = target
        return decision
