"""Stage I scorer: six-dimension reviews of proposed blueprints, triaged and committed one by one."""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

from pydantic import BaseModel

from twinforge.blueprints import (
    FIELDS,
    Blueprint,
    BlueprintRecord,
    BlueprintStore,
    CheckRules,
    Dimensions,
    DimensionScore,
    Finding,
    Moved,
    ReplyScore,
    Review,
    ScoreCap,
    Status,
    check_blueprint,
    combined_caps,
    load_check_rules,
    load_dimensions,
    reply_model,
    triage,
    utcnow,
)
from twinforge.core.exceptions import (
    ConfigError,
    ForeignChangeError,
    ModelCallError,
    StructuredOutputError,
    WorkspaceError,
)
from twinforge.core.llm import ChatModel, Message, make_chat_model, request_object
from twinforge.core.prompts import Prompt
from twinforge.core.recovery import Recovery
from twinforge.core.settings import TriageSettings
from twinforge.core.workspace import Workspace
from twinforge.reviewer.rationale import restating_dimensions


@dataclass
class ReviewOutcome:
    """One blueprint's review result.

    Attributes:
        blueprint_id: The blueprint.
        status: Its status afterwards (``proposed`` when the review failed).
        total: Score total, when reviewed.
        error: Why the review failed, when it did.
        seconds: Model time spent.
        completion_tokens: Tokens generated.
        note: Extra remark (near-duplicate routed to human review, ...).
        committed: False when the review was written to the file but not committed.
    """

    blueprint_id: str
    status: Status
    total: int | None = None
    error: str | None = None
    seconds: float = 0.0
    completion_tokens: int = 0
    note: str | None = None
    committed: bool = True


@dataclass
class ReviewReport:
    """All outcomes of one ``review`` call.

    Attributes:
        outcomes: One per blueprint handled.
        invalid: ``path: errors`` of blueprint files skipped because they do not validate.
        recovery: What the start-of-run recovery committed or left alone.
        commit_error: The first commit failure, which stopped the run.
        not_started: Ids never sent to the model because the run stopped.
    """

    outcomes: list[ReviewOutcome] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    recovery: Recovery = field(default_factory=Recovery)
    commit_error: str | None = None
    not_started: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[ReviewOutcome]:
        """Outcomes whose review failed."""
        return [o for o in self.outcomes if o.error]

    @property
    def uncommitted(self) -> list[str]:
        """Ids whose review is written to the file but not committed (the next run commits them)."""
        return [o.blueprint_id for o in self.outcomes if not o.committed]


def record_findings(record: BlueprintRecord, rules: CheckRules | None = None) -> list[Finding]:
    """The check findings of a stored blueprint, plus one for a near-duplicate flag (which caps too)."""
    rules = rules or load_check_rules()
    findings = check_blueprint(record.blueprint, rules=rules)
    for flag in record.flags:
        if flag.kind == "near_duplicate":
            findings.append(
                Finding(
                    rule="near-duplicate",
                    field="(whole blueprint)",
                    message=f"the blueprint is a near-duplicate of {flag.of}: {flag.detail}",
                    hint="write a different scenario",
                    principle=rules.near_duplicate.principle,
                    caps=dict(rules.near_duplicate.caps),
                )
            )
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
) -> tuple[Review, float, int]:
    """Ask the reviewer model for the six scores of one blueprint.

    The prompt carries the anchored rubrics, the fields each dimension's quote comes from and the
    blueprint's check findings; a reply whose quotes (when found in the blueprint) and rationales
    only restate the rubric is re-asked once (docs/stage1.md, "Grounded rationales"); scores above
    the cap of a failed check are lowered to it and the cap is recorded on the score (docs/stage1.md).

    Returns:
        The review (total and triage band set; band from the Stage I rule), model seconds and
        completion tokens.

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
        findings=findings,
        dimensions=dimensions.dimensions,
        dimension_ids=dimensions.ids,
    )
    result = request_object(chat, messages, reply, schema_name="review", retries=retries)
    completions = list(result.completions)
    given: dict[str, ReplyScore] = {d: getattr(result.value, d) for d in dimensions.ids}
    notes = []
    still: list[str] = []
    restating = restating_dimensions(given, dimensions, bp)
    if restating:
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
    scores = apply_caps(given, findings)
    total = sum(s.score for s in scores.values())
    review = Review(
        scores=scores,
        total=total,
        triage=triage(total, thresholds),
        model=chat.name,
        prompt_version=prompt.version,
        reviewed_at=utcnow(),
        findings=findings,
        notes=notes,
        restated=still,
    )
    seconds = sum(c.seconds for c in completions)
    tokens = sum(c.completion_tokens for c in completions)
    return review, seconds, tokens


def apply_review(record: BlueprintRecord, review: Review) -> str | None:
    """Store ``review`` on ``record`` and move it to its triage band.

    A blueprint flagged as a near-duplicate, one that fails a check, or one whose review rationales
    still restated the rubric after the re-ask (scores nobody explained) is never silently kept: a
    ``kept`` band goes to ``needs_review`` instead, with the reason recorded (docs/stage1.md).

    Returns:
        A note when the band was changed by a flag or a failed check, else ``None``.
    """
    record.review = review
    target, note = review.triage, None
    if target is Status.KEPT:
        duplicate = next((f for f in record.flags if f.kind == "near_duplicate"), None)
        failed = sorted({f.rule for f in review.findings if f.rule != "near-duplicate"})
        if duplicate is not None:
            note = f"near-duplicate of {duplicate.of}: kept band routed to human review"
        elif failed:
            note = f"fails check(s) {', '.join(failed)}: kept band routed to human review"
        elif review.restated:
            note = f"rationale restates the rubric ({', '.join(review.restated)}): kept band routed to human review"
        if note:
            target = Status.NEEDS_REVIEW
    reason = f"total {review.total}" + (f"; {note}" if note else "")
    record.move(target, action="triage", by=f"reviewer:{review.model}", reason=reason)
    return note


def review_pending(
    workspace: Workspace,
    *,
    chat: ChatModel | None = None,
    ids: list[str] | None = None,
    concurrency: int | None = None,
    on_done: Callable[[ReviewOutcome], None] | None = None,
) -> ReviewReport:
    """Review every ``proposed`` blueprint (or just ``ids``), at most ``concurrency`` at once.

    Each finished review is written at once and committed (one commit per blueprint; reviews that
    finish together share a group commit), so a killed run keeps every review it finished and the
    next run commits twinforge's own uncommitted writes (journaled) and picks up the rest. A failed
    review leaves the blueprint ``proposed`` and saves the raw reply under ``.twinforge/failures/``.
    The repository is checked before any model call (no detached HEAD, rebase, merge or index
    lock); blueprint files with a person's uncommitted edits are skipped and named, as are files
    that do not validate. The first commit failure stops the run: reviews in flight are written
    (journaled, not committed) and no new one starts.

    Args:
        workspace: The workspace.
        chat: Reviewer model (default: built from ``[models.reviewer]``).
        ids: Only these blueprints; duplicates are ignored and those not ``proposed`` are reported
            as skipped without a model call.
        concurrency: Reviews in flight (default ``[models.reviewer] concurrency``).
        on_done: Called after each blueprint, in completion order.

    Returns:
        One outcome per blueprint.

    Raises:
        BlueprintFileError: An id in ``ids`` has no valid file.
        ConfigError: ``[triage] keep`` exceeds the maximum total of the dimensions.
        RepositoryStateError: The repository cannot take commits now (before any model call).
    """
    workspace.check_ready()
    store = BlueprintStore(workspace)
    report = ReviewReport(recovery=store.recover())
    settings = workspace.config.models.reviewer
    chat = chat or make_chat_model(settings, role="reviewer")
    dimensions = load_dimensions()
    thresholds = workspace.config.triage
    if dimensions.max_total < thresholds.keep:
        raise ConfigError(
            f"keep = {thresholds.keep} exceeds the maximum total {dimensions.max_total}: nothing could be kept",
            field="triage.keep",
        )
    if ids is None:
        pending = store.records(Status.PROPOSED)
        report.invalid = [str(exc) for exc in store.skipped.values()]
    else:
        pending = []
        for blueprint_id in dict.fromkeys(ids):
            record = store.load(blueprint_id)
            if record.status is Status.PROPOSED:
                pending.append(record)
            else:
                report.outcomes.append(
                    ReviewOutcome(
                        record.id, record.status, note=f"not reviewed: it is {record.status.value}, not proposed"
                    )
                )
    edited = set(workspace.foreign_changes("blueprints"))
    for record in [r for r in pending if _rel(store, r.id) in edited]:
        pending.remove(record)
        report.outcomes.append(
            ReviewOutcome(
                record.id,
                record.status,
                note=f"not reviewed: {_rel(store, record.id)} has uncommitted edits twinforge did not make "
                "(commit or revert them, then run again)",
            )
        )
    prompt, reply = Prompt("review"), reply_model(dimensions)
    stop = threading.Event()

    def work(record: BlueprintRecord) -> ReviewOutcome | None:
        if stop.is_set():
            return None
        try:
            review, seconds, tokens = score_blueprint(
                chat,
                record,
                store,
                dimensions,
                thresholds,
                retries=settings.validation_retries,
                prompt=prompt,
                reply=reply,
            )
        except (StructuredOutputError, ModelCallError) as exc:
            replies = exc.raws if isinstance(exc, StructuredOutputError) else []
            stamp = utcnow().strftime("%Y%m%dT%H%M%S")
            workspace.write(
                f".twinforge/failures/review-{record.id}-{stamp}-{secrets.token_hex(2)}.json",
                json.dumps({"blueprint": record.id, "error": str(exc), "replies": replies}, indent=2),
            )
            return ReviewOutcome(record.id, record.status, error=str(exc))
        triage: list[str | None] = [None]

        def prepare(current: BlueprintRecord) -> str | None:
            if current.status is not Status.PROPOSED:
                return "changed by someone else meanwhile; not overwritten"
            if current.blueprint != record.blueprint:
                # The score belongs to text that is no longer there; the next run scores the new text.
                return "edited while being reviewed; left proposed for the next run"
            triage[0] = apply_review(current, review)
            return None

        def message(moved: Moved) -> str:
            after = moved.after.value if moved.after else "?"
            return (
                f"review: {record.id} scored {review.total}/{dimensions.max_total} -> {after}\n\n"
                f"model: {review.model}\nprompt: {review.prompt_version}"
            )

        committing = not stop.is_set()
        try:
            moved = store.move(
                record.id,
                (),
                action="triage",
                by=f"reviewer:{review.model}",
                message=message,
                prepare=prepare,
                group="review",
                commit=committing,
            )
        except ForeignChangeError:
            return ReviewOutcome(
                record.id, record.status, note="edited by someone while being reviewed; not overwritten"
            )
        except WorkspaceError as exc:
            if not stop.is_set():
                report.commit_error = str(exc)
            stop.set()
            status = store.load(record.id).status  # written, journaled: the next run commits it
            return ReviewOutcome(
                record.id,
                status,
                total=review.total,
                seconds=seconds,
                completion_tokens=tokens,
                note=triage[0],
                committed=False,
            )
        if moved.after is moved.before:
            return ReviewOutcome(record.id, moved.after or record.status, note=moved.note)
        return ReviewOutcome(
            record.id,
            moved.after or record.status,
            total=review.total,
            seconds=seconds,
            completion_tokens=tokens,
            note=triage[0],
            committed=committing,  # the run stopped at a commit failure; the next run commits it
        )

    workers = concurrency or settings.concurrency
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="review") as pool:
        futures = {pool.submit(work, record): record.id for record in pending}
        for future in as_completed(futures):
            result = future.result()
            if result is None:
                report.not_started.append(futures[future])
                continue
            report.outcomes.append(result)
            if on_done:
                on_done(result)
    return report


def _rel(store: BlueprintStore, blueprint_id: str) -> str:
    return str(store.path(blueprint_id).relative_to(store.workspace.root))
