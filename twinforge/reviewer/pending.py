"""``review``: score the pending blueprints, several at once, and commit each review as it finishes."""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from twinforge.blueprints import (
    BlueprintRecord,
    BlueprintStore,
    Commit,
    Dimensions,
    LifecycleMove,
    Moved,
    Review,
    Status,
    load_dimensions,
    reply_model,
    utcnow,
)
from twinforge.core.exceptions import (
    ConfigError,
    ForeignChangeError,
    ModelCallError,
    StructuredOutputError,
    WorkspaceError,
)
from twinforge.core.llm import ChatModel, Completion, FlatUsage, Usage, make_chat_model
from twinforge.core.prompts import Prompt
from twinforge.core.recovery import Recovery
from twinforge.core.settings import TriageSettings
from twinforge.core.workspace import Workspace
from twinforge.reviewer.review import review_target, score_blueprint, triage_reason


class ReviewOutcome(FlatUsage):
    """One blueprint's review result (``review --json`` prints a list of them, usage fields flat).

    Attributes:
        blueprint_id: The blueprint.
        status: Its status afterwards (``proposed`` when the review failed).
        total: Score total, when reviewed.
        error: Why the review failed, when it did.
        usage: Calls, tokens (prompt, cached, completion) and model time over every call of the
            review (printed as ``calls``, ``prompt_tokens``, ... beside the other keys).
        note: Extra remark (near-duplicate routed to human review, ...).
        committed: False when the review was written to the file but not committed.
    """

    model_config = ConfigDict(extra="forbid")

    blueprint_id: str
    status: Status
    total: int | None = None
    error: str | None = None
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


@dataclass
class _ReviewRun:
    """What every review of one ``review_pending`` call shares."""

    workspace: Workspace
    store: BlueprintStore
    chat: ChatModel
    dimensions: Dimensions
    thresholds: TriageSettings
    retries: int
    report: ReviewReport
    prompt: Prompt = field(default_factory=lambda: Prompt("review"))
    reply: type[BaseModel] | None = None
    stop: threading.Event = field(default_factory=threading.Event)


def _pending(store: BlueprintStore, ids: list[str] | None, report: ReviewReport) -> list[BlueprintRecord]:
    """The ``proposed`` blueprints to review: all, or those of ``ids`` (the others reported as skipped)."""
    if ids is None:
        pending = store.records(Status.PROPOSED)
        report.invalid = [str(exc) for exc in store.skipped.values()]  # filled by the scan above
        return pending
    pending = []
    for blueprint_id in dict.fromkeys(ids):
        record = store.load(blueprint_id)
        if record.status is Status.PROPOSED:
            pending.append(record)
        else:
            note = f"not reviewed: it is {record.status.value}, not proposed"
            report.outcomes.append(ReviewOutcome(blueprint_id=record.id, status=record.status, note=note))
    return pending


def _without_foreign_edits(
    workspace: Workspace, store: BlueprintStore, pending: list[BlueprintRecord], report: ReviewReport
) -> list[BlueprintRecord]:
    """``pending`` minus blueprints whose files hold a person's uncommitted edits (reported, not reviewed)."""
    edited = set(workspace.foreign_changes("blueprints"))
    kept = []
    for record in pending:
        if _rel(store, record.id) not in edited:
            kept.append(record)
            continue
        note = (
            f"not reviewed: {_rel(store, record.id)} has uncommitted edits twinforge did not make "
            "(commit or revert them, then run again)"
        )
        report.outcomes.append(ReviewOutcome(blueprint_id=record.id, status=record.status, note=note))
    return kept


def _save_failure(run: _ReviewRun, record: BlueprintRecord, exc: StructuredOutputError | ModelCallError) -> None:
    """Keep a failed review's raw replies under ``.twinforge/failures/`` (no data is lost)."""
    replies = exc.raws if isinstance(exc, StructuredOutputError) else []
    stamp = utcnow().strftime("%Y%m%dT%H%M%S")
    run.workspace.write(
        f".twinforge/failures/review-{record.id}-{stamp}-{secrets.token_hex(2)}.json",
        json.dumps({"blueprint": record.id, "error": str(exc), "replies": replies}, indent=2),
    )


def _store_review(
    run: _ReviewRun, record: BlueprintRecord, review: Review, completions: list[Completion]
) -> ReviewOutcome:
    """Write ``review`` through the lifecycle's one door and commit it (grouped with reviews finishing together).

    The first commit failure stops the run: this review stays written and journaled (the next run
    commits it) and no new review starts.
    """
    target, note = review_target(record, review)

    def attach(current: BlueprintRecord) -> str | None:
        if current.status is not Status.PROPOSED:
            return "changed by someone else meanwhile; not overwritten"
        if current.blueprint != record.blueprint or current.flags != record.flags:
            # The score belongs to text that is no longer there; the next run scores the new text.
            return "edited while being reviewed; left proposed for the next run"
        current.review = review
        return None

    def message(moved: Moved) -> str:
        after = moved.after.value if moved.after else "?"
        return (
            f"review: {record.id} scored {review.total}/{run.dimensions.max_total} -> {after}\n\n"
            f"model: {review.model}\nprompt: {review.prompt_version}"
        )

    committing = not run.stop.is_set()
    usage = Usage.of(completions)
    move = LifecycleMove(
        record.id,
        target,
        action="triage",
        by=f"reviewer:{review.model}",
        commit=Commit(message, group="review", defer=not committing),
        reason=triage_reason(review, note),
        prepare=attach,
    )
    try:
        moved = run.store.apply(move)
    except ForeignChangeError:
        return ReviewOutcome(
            blueprint_id=record.id, status=record.status, note="edited by someone while being reviewed; not overwritten"
        )
    except WorkspaceError as exc:
        if not run.stop.is_set():
            run.report.commit_error = str(exc)
        run.stop.set()
        status = run.store.load(record.id).status  # written, journaled: the next run commits it
        return ReviewOutcome(
            blueprint_id=record.id, status=status, total=review.total, usage=usage, note=note, committed=False
        )
    if moved.after is moved.before:
        return ReviewOutcome(blueprint_id=record.id, status=moved.after or record.status, note=moved.note)
    # committed=False: the run stopped at a commit failure meanwhile; the next run commits it.
    return ReviewOutcome(
        blueprint_id=record.id,
        status=moved.after or record.status,
        total=review.total,
        usage=usage,
        note=note,
        committed=committing,
    )


def _review_one(run: _ReviewRun, record: BlueprintRecord) -> ReviewOutcome | None:
    """Score one blueprint and store the result; ``None`` when the run stopped before it started."""
    if run.stop.is_set():
        return None
    try:
        review, completions = score_blueprint(
            run.chat,
            record,
            run.store,
            run.dimensions,
            run.thresholds,
            retries=run.retries,
            prompt=run.prompt,
            reply=run.reply,
        )
    except (StructuredOutputError, ModelCallError) as exc:
        _save_failure(run, record, exc)
        return ReviewOutcome(blueprint_id=record.id, status=record.status, error=str(exc))
    return _store_review(run, record, review, completions)


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
        concurrency: Reviews in flight (default: the reviewer role's concurrency; for the embedded
            server its slot count).
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
    dimensions = load_dimensions()
    thresholds = workspace.config.triage
    if dimensions.max_total < thresholds.keep:
        raise ConfigError(
            f"keep = {thresholds.keep} exceeds the maximum total {dimensions.max_total}: nothing could be kept",
            field="triage.keep",
        )
    run = _ReviewRun(
        workspace=workspace,
        store=store,
        chat=chat or make_chat_model(settings, role="reviewer"),
        dimensions=dimensions,
        thresholds=thresholds,
        retries=settings.validation_retries,
        report=report,
        reply=reply_model(dimensions),
    )
    pending = _without_foreign_edits(workspace, store, _pending(store, ids, report), report)
    workers = concurrency or workspace.config.concurrency(settings)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="review") as pool:
        futures = {pool.submit(_review_one, run, record): record.id for record in pending}
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
