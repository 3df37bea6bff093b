"""The blueprint status lifecycle (docs/design.md, "Blueprint lifecycle").

``proposed -> kept | needs_review | discarded -> approved | rejected -> implemented | impl_failed
-> validated -> calibrated | calibration_failed -> admitted``. Humans may override any Stage I
decision (docs/design.md, "Stage I"), so kept, needs_review and discarded can each go to approved or rejected,
and a human decision can be revised. A proposal with a defect is stored ``refused``
(``blueprints/refused/<id>.yaml``, docs/stage1.md, "Nothing proposed is lost"); re-checked with
today's rules and found free of defects it is released to ``proposed``.
"""

from __future__ import annotations

from enum import StrEnum

from twinforge.blueprints.exceptions import InvalidTransition


class Status(StrEnum):
    """Where a blueprint is in the pipeline."""

    REFUSED = "refused"
    PROPOSED = "proposed"
    KEPT = "kept"
    NEEDS_REVIEW = "needs_review"
    DISCARDED = "discarded"
    APPROVED = "approved"
    REJECTED = "rejected"
    IMPLEMENTED = "implemented"
    IMPL_FAILED = "impl_failed"
    VALIDATED = "validated"
    CALIBRATED = "calibrated"
    CALIBRATION_FAILED = "calibration_failed"
    ADMITTED = "admitted"


S = Status
TRANSITIONS: dict[Status, frozenset[Status]] = {
    S.REFUSED: frozenset({S.PROPOSED}),
    S.PROPOSED: frozenset({S.KEPT, S.NEEDS_REVIEW, S.DISCARDED}),
    S.KEPT: frozenset({S.APPROVED, S.REJECTED, S.NEEDS_REVIEW, S.IMPLEMENTED, S.IMPL_FAILED}),
    S.NEEDS_REVIEW: frozenset({S.APPROVED, S.REJECTED}),
    S.DISCARDED: frozenset({S.APPROVED, S.REJECTED, S.NEEDS_REVIEW}),
    S.APPROVED: frozenset({S.REJECTED, S.IMPLEMENTED, S.IMPL_FAILED}),
    S.REJECTED: frozenset({S.APPROVED}),
    S.IMPLEMENTED: frozenset({S.VALIDATED, S.IMPL_FAILED}),
    S.IMPL_FAILED: frozenset({S.APPROVED, S.IMPLEMENTED}),
    S.VALIDATED: frozenset({S.CALIBRATED, S.CALIBRATION_FAILED}),
    S.CALIBRATED: frozenset({S.ADMITTED, S.VALIDATED, S.CALIBRATION_FAILED}),
    S.CALIBRATION_FAILED: frozenset({S.ADMITTED, S.VALIDATED, S.CALIBRATED}),
    S.ADMITTED: frozenset({S.VALIDATED}),
}
TRIAGE_STATUSES = (S.KEPT, S.NEEDS_REVIEW, S.DISCARDED)
PAST_REVIEW: frozenset[Status] = frozenset(Status) - {S.REFUSED, S.PROPOSED, *TRIAGE_STATUSES}
"""Statuses after Stage I review: a human approved or rejected, or the pipeline has moved on (the
queue counts a blueprint in one of them as reviewed)."""


def check_transition(blueprint_id: str, current: Status, target: Status) -> None:
    """Refuse a status change the lifecycle does not allow.

    Raises:
        InvalidTransition: ``target`` is not reachable from ``current`` in one step.
    """
    if target not in TRANSITIONS[current]:
        raise InvalidTransition(blueprint_id, current.value, target.value, sorted(TRANSITIONS[current]))
