"""Human review actions on a blueprint record.

docs/design.md, "Stage I": humans may override any decision. Each action changes the record in
memory and returns a one-line commit message; the caller writes and commits the record.
"""

from __future__ import annotations

from pydantic import ValidationError

from twinforge.blueprints.blueprint import FIELDS, Blueprint
from twinforge.blueprints.checks import check_blueprint
from twinforge.blueprints.exceptions import ReviewActionError
from twinforge.blueprints.record import BlueprintRecord, FieldEdit, Note, utcnow
from twinforge.blueprints.status import Status
from twinforge.blueprints.taxonomy import Taxonomy
from twinforge.core.llm import describe_validation_error

OVERRIDABLE = (Status.KEPT, Status.DISCARDED)  # the reviewer model's decisions a human can overturn
DECIDED = (Status.APPROVED, Status.REJECTED)
OVERRIDE_TARGETS: dict[Status, tuple[Status, ...]] = {
    Status.KEPT: (Status.REJECTED, Status.NEEDS_REVIEW),
    Status.DISCARDED: (Status.APPROVED, Status.NEEDS_REVIEW),
}
"""Where an override may move the reviewer model's band: against it, or back to human review
(approving a kept blueprint or rejecting a discarded one is a plain approve or reject)."""


def override_targets(status: Status) -> tuple[Status, ...]:
    """The statuses an override may move a blueprint of ``status`` to (empty: not overridable)."""
    return OVERRIDE_TARGETS.get(status, ())


def _with_reason(subject: str, reason: str) -> str:
    """A commit message: ``subject: reason`` on one line, or the first line there and the whole reason below."""
    first, _, rest = reason.partition("\n")
    if not rest.strip():
        return f"{subject}: {first}"
    return f"{subject}: {first.rstrip()} [...]\n\n{reason}"


def _reason(reason: str | None, action: str) -> str:
    text = (reason or "").strip()
    if not text:
        raise ReviewActionError(f"{action} needs a reason")
    return text


def standing_doubts(record: BlueprintRecord) -> list[str]:
    """The doubts a person sees with the blueprint now, as ``rule (field)``: today's checks and its flags.

    An approval records them as the doubts it overrode (docs/stage1.md, "Defects and doubts").
    """
    found = [f"{f.rule} ({f.field})" for f in check_blueprint(record.blueprint)]
    found += [f"{'same-scenario' if f.kind == 'same_scenario' else 'near-duplicate'} (of {f.of})" for f in record.flags]
    return list(dict.fromkeys(found))


def approve(record: BlueprintRecord, by: str, reason: str | None = None) -> str:
    """Approve a blueprint from ``needs_review`` or ``kept`` (approving a discarded one is an override).

    The decision records the doubts standing when it was approved (:func:`standing_doubts`).

    Raises:
        ReviewActionError: The status does not allow a plain approval.
        InvalidTransition: The lifecycle refuses the change.
    """
    if record.status not in (Status.NEEDS_REVIEW, Status.KEPT, Status.REJECTED):
        raise ReviewActionError(f"{record.id} is {record.status.value}; use override to approve it")
    overrode = standing_doubts(record)
    record.move(Status.APPROVED, action="approve", by=by, reason=(reason or "").strip() or None, overrode=overrode)
    if not overrode:
        return f"approve: {record.id} by {by}"
    return f"approve: {record.id} by {by} over {len(overrode)} doubt(s)\n\noverrode: {', '.join(overrode)}"


def reject(record: BlueprintRecord, by: str, reason: str | None) -> str:
    """Reject a blueprint; a reason is required.

    Raises:
        ReviewActionError: No reason given.
        InvalidTransition: The lifecycle refuses the change.
    """
    text = _reason(reason, "reject")
    record.move(Status.REJECTED, action="reject", by=by, reason=text)
    return _with_reason(f"reject: {record.id} by {by}", text)


def override(record: BlueprintRecord, target: Status, by: str, reason: str | None) -> str:
    """Overturn the reviewer model's ``kept`` or ``discarded`` band; a reason is required.

    Args:
        record: The blueprint.
        target: ``approved``, ``rejected`` or ``needs_review``.
        by: Who decides.
        reason: Why.

    Raises:
        ReviewActionError: Not a kept or discarded blueprint, or no reason.
        InvalidTransition: The lifecycle refuses the change.
    """
    if record.status not in OVERRIDABLE:
        raise ReviewActionError(f"{record.id} is {record.status.value}; only kept or discarded can be overridden")
    allowed = override_targets(record.status)
    if target not in allowed:
        raise ReviewActionError(
            f"an override moves a {record.status.value} blueprint to {' or '.join(s.value for s in allowed)}, "
            f"not {target.value}"
        )
    text = _reason(reason, "override")
    before = record.status.value
    overrode = standing_doubts(record) if target is Status.APPROVED else None
    record.move(target, action="override", by=by, reason=text, overrode=overrode)
    return _with_reason(f"override: {record.id} {before} -> {target.value} by {by}", text)


def edit_field(record: BlueprintRecord, field: str, value: str, by: str, taxonomy: Taxonomy | None = None) -> str:
    """Replace one of the eight fields, validated; the old value is kept in ``record.edits``.

    Raises:
        ReviewActionError: Unknown field, unchanged value, or the new value does not validate
            (the message says why).
    """
    if field not in FIELDS:
        raise ReviewActionError(f"{field!r} is not a blueprint field; fields: {', '.join(FIELDS)}")
    old = str(getattr(record.blueprint, field))
    if value.strip() == old:
        raise ReviewActionError(f"{field} is unchanged")
    data = {**record.blueprint.model_dump(), field: value}
    try:
        updated = Blueprint.model_validate(data, context={"taxonomy": taxonomy} if taxonomy else None)
    except ValidationError as exc:
        raise ReviewActionError("; ".join(describe_validation_error(exc))) from exc
    record.blueprint = updated
    record.edits = [
        *record.edits,
        FieldEdit(field=field, old=old, new=str(getattr(updated, field)), by=by, at=utcnow()),
    ]
    return f"edit: {record.id} {field} by {by}"


def add_note(record: BlueprintRecord, text: str, by: str) -> str:
    """Attach a note.

    Raises:
        ReviewActionError: Empty note.
    """
    body = text.strip()
    if not body:
        raise ReviewActionError("a note cannot be empty")
    record.notes = [*record.notes, Note(by=by, at=utcnow(), text=body)]
    return f"note: {record.id} by {by}"
