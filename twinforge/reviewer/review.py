"""Stage I scorer: the six-dimension review of one blueprint, its score caps and its triage band."""

from __future__ import annotations

from pydantic import BaseModel

from twinforge.blueprints import (
    FIELDS,
    WHOLE,
    Blueprint,
    BlueprintRecord,
    BlueprintStore,
    CheckRules,
    Dimensions,
    DimensionScore,
    Finding,
    ReplyScore,
    Review,
    ScoreCap,
    Status,
    check_blueprint,
    combined_caps,
    follow_up_findings,
    load_check_rules,
    reply_model,
    triage,
    utcnow,
)
from twinforge.core.llm import ChatModel, Completion, Message, feedback_messages, request_object
from twinforge.core.prompts import Prompt
from twinforge.core.settings import TriageSettings
from twinforge.reviewer.rationale import restating_dimensions


def record_findings(record: BlueprintRecord, rules: CheckRules | None = None) -> list[Finding]:
    """Today's findings on a stored blueprint, one per flag (a possible repeat of a stored one), and on its later turns.

    Every one is a reason for a person to look: a stored blueprint's findings are doubts, and one
    a rule added later calls a defect (``blueprint check --stored`` names it) is shown all the same.
    """
    rules = rules or load_check_rules()
    findings = check_blueprint(record.blueprint, rules=rules)
    for flag in record.flags:
        text = rules.pool["same-scenario"]
        findings.append(
            Finding(
                rule="same-scenario" if flag.kind == "same_scenario" else "near-duplicate",
                field=WHOLE,
                message=f"the blueprint {text.what}: {flag.detail}",
                hint=text.hint,
                principle=text.principle,
                caps=dict(text.caps),
            )
        )
    findings += follow_up_findings(record.blueprint, record.follow_ups, rules=rules)
    return findings


def apply_caps(scores: dict[str, ReplyScore], findings: list[Finding]) -> dict[str, DimensionScore]:
    """The stored scores: each lowered to the cap of the failed checks covering it, the cap recorded."""
    caps = combined_caps(findings)
    out = {}
    for dim, given in scores.items():
        limit, rules = caps.get(dim, (5, []))
        if given.score > limit:
            cap = ScoreCap.model_validate({"limit": limit, "model_score": given.score, "rules": tuple(rules)})
            out[dim] = DimensionScore.model_validate(
                {"quote": given.quote, "score": limit, "rationale": given.rationale, "cap": cap}
            )
        else:
            out[dim] = DimensionScore(quote=given.quote, score=given.score, rationale=given.rationale)
    return out


def _example_quote(bp: Blueprint, field: str = "harm_path") -> str:
    """A quote of the blueprint for the re-ask: the first five words of ``field``, in quotes."""
    return '"' + " ".join(str(getattr(bp, field)).split()[:5]).rstrip(".,;:") + '"'


def _evidence_field(dimensions: Dimensions, dimension_id: str) -> str:
    """The first blueprint field a dimension's quote comes from (``harm_path`` when none is named)."""
    for d in dimensions.dimensions:
        if d.id == dimension_id and d.evidence:
            return d.evidence[0]
    return "harm_path"


def score_blueprint(
    chat: ChatModel,
    record: BlueprintRecord,
    store: BlueprintStore,
    dimensions: Dimensions,
    thresholds: TriageSettings,
    *,
    retries: int = 2,
    prompt: Prompt | None = None,
    reply: type[BaseModel] | None = None,
    previous: tuple[str, list[str]] | None = None,
    reask_restating: bool = True,
) -> tuple[Review, list[Completion]]:
    """Ask the reviewer model for the six scores of one blueprint.

    The prompt carries the anchored rubrics, the fields each dimension's quote comes from and the
    blueprint's check findings; a reply whose quotes (when found in the blueprint) and rationales
    only restate the rubric is re-asked once (docs/stage1.md, "Grounded rationales"); scores above
    the cap of a failed check are lowered to it and the cap is recorded on the score (docs/stage1.md).

    Args:
        chat: The reviewer model.
        record: The blueprint.
        store: The workspace's blueprints (taxonomy).
        dimensions: The review dimensions.
        thresholds: The triage bands.
        retries: Re-asks of an invalid reply.
        prompt: Template pair (default ``review``).
        reply: The reply model (default: :func:`reply_model` of ``dimensions``).
        previous: The blueprint's review in a batch call that did not validate and its problems: fed
            back before the first call (docs/stage1.md, "One call per batch").
        reask_restating: Re-ask a reply whose rationales restate the rubric (off in batch mode).

    Returns:
        The review (total and triage band set; band from the Stage I rule) and every completion
        it took (for time and token accounting).

    Raises:
        StructuredOutputError: The reply stayed invalid after ``retries`` re-asks.
        ModelCallError: Transport failure after retries.
    """
    prompt = prompt or Prompt("review")
    reply = reply or reply_model(dimensions)
    bp = record.blueprint
    source, risk = store.taxonomy.split(bp.taxonomy_id)
    findings = record_findings(record)
    messages = prompt.render(
        cell=bp.taxonomy_id,
        source=source,
        risk=risk,
        fields=[(name, getattr(bp, name)) for name in FIELDS],
        follow_ups=record.follow_ups,
        findings=findings,
        dimensions=dimensions.dimensions,
        dimension_ids=dimensions.ids,
    )
    first = messages
    if previous is not None:
        first = feedback_messages(
            messages, previous[0], previous[1], ["Reply again with only the corrected JSON object."]
        )
    result = request_object(chat, first, reply, schema_name="review", retries=retries)
    completions = list(result.completions)
    given: dict[str, ReplyScore] = {d: getattr(result.value, d) for d in dimensions.ids}
    notes = []
    still: list[str] = []
    restating = restating_dimensions(given, dimensions, bp)
    if restating and not reask_restating:
        still = restating
        notes.append(f"rationale restates the rubric for {', '.join(restating)} (not re-asked in batch mode)")
    elif restating:
        ask = (
            f"Your rationale for {', '.join(restating)} only restates the rubric. Reply again with the whole "
            'JSON object; in every "quote" copy a few words of this blueprint exactly as written, e.g. '
            f"{_example_quote(bp, _evidence_field(dimensions, restating[0]))} for {restating[0]}, and in the rationale "
            "say what in them earns the score."
        )
        again = [
            *messages,
            Message(role="assistant", content=completions[-1].text),
            Message(role="user", content=ask),
        ]
        second = request_object(chat, again, reply, schema_name="review", retries=retries)
        completions += second.completions
        given = {d: getattr(second.value, d) for d in dimensions.ids}
        still = restating_dimensions(given, dimensions, bp)
        notes.append(
            f"rationale re-asked once for {', '.join(restating)} (restated the rubric)"
            + (f"; still restates it for {', '.join(still)}" if still else "")
        )
    review = build_review(given, findings, thresholds, model=chat.name, prompt=prompt.version, notes=notes, still=still)
    return review, completions


def build_review(
    given: dict[str, ReplyScore],
    findings: list[Finding],
    thresholds: TriageSettings,
    *,
    model: str,
    prompt: str,
    notes: list[str],
    still: list[str],
) -> Review:
    """The stored review of a reply's scores: capped by the doubts, totalled and banded (docs/stage1.md, "Review").

    Args:
        given: Dimension id -> the reply's score, quote and rationale.
        findings: The doubts the reviewer was shown (their caps apply).
        thresholds: The triage bands.
        model: ``provider:model`` of the reviewer.
        prompt: The prompt's version id.
        notes: Remarks on how the review was asked.
        still: Dimensions whose rationale restates the rubric.
    """
    scores = apply_caps(given, findings)
    total = sum(s.score for s in scores.values())
    return Review(
        scores=scores,
        total=total,
        triage=triage(total, thresholds),
        model=model,
        prompt_version=prompt,
        reviewed_at=utcnow(),
        findings=findings,
        notes=notes,
        restated=still,
    )


def review_target(record: BlueprintRecord, review: Review) -> tuple[Status, str | None]:
    """Where a review sends a blueprint, and why when it is not the review's band.

    The band follows the Stage I rule (>= 24 keep, 18-23 human review, < 18 discard), except that a
    blueprint with a doubt (a finding of the checks, a possible repeat of a stored one) goes to a
    person whatever its total, and one whose rationales still restated the rubric after the re-ask
    (scores nobody explained) is not kept unseen (docs/stage1.md, "Review").

    Returns:
        The target status and, when it differs from the band, the reason.
    """
    band = review.triage
    doubted = sorted({f.rule for f in review.findings})
    if doubted and band is not Status.NEEDS_REVIEW:
        return (
            Status.NEEDS_REVIEW,
            f"doubt(s) {', '.join(doubted)}: sent to a person whatever the score ({band.value} band)",
        )
    if band is Status.KEPT and review.restated:
        return Status.NEEDS_REVIEW, (
            f"rationale restates the rubric ({', '.join(review.restated)}): kept band routed to human review"
        )
    return band, None


def apply_review(record: BlueprintRecord, review: Review) -> str | None:
    """Store ``review`` on ``record`` and move it where :func:`review_target` sends it.

    Returns:
        The reason when the target is not the review's band, else ``None``.
    """
    record.review = review
    target, note = review_target(record, review)
    record.move(target, action="triage", by=f"reviewer:{review.model}", reason=triage_reason(review, note))
    return note


def triage_reason(review: Review, note: str | None) -> str:
    """The triage decision's reason: the total, and why the band was changed when it was."""
    return f"total {review.total}" + (f"; {note}" if note else "")
