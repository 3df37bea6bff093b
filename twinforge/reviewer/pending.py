"""``review``: score the pending blueprints, several at once, and commit each review as it finishes.

One call per blueprint (``slots``), or one call per batch of up to ten blueprints of a cell
(``batch``, the reviewer role's ``stage1_mode``; docs/stage1.md, "One call per batch").
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Literal

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
from twinforge.core.llm import ChatModel, FlatUsage, PerItem, Usage, make_chat_model
from twinforge.core.prompts import Prompt
from twinforge.core.recovery import Recovery
from twinforge.core.settings import ModelPrice, TriageSettings
from twinforge.core.workspace import Workspace
from twinforge.reviewer.batch import REVIEW_BATCH, score_batch
from twinforge.reviewer.review import review_target, score_blueprint, triage_reason


class ReviewOutcome(FlatUsage):
    """One blueprint's review result (``review --json`` prints a list of them, usage fields flat).

    Attributes:
        blueprint_id: The blueprint.
        status: Its status afterwards (``proposed`` when the review failed).
        total: Score total, when reviewed.
        error: Why the review failed, when it did.
        usage: Calls, tokens (prompt, cached, completion) and model time over every call of the
            review (printed as ``calls``, ``prompt_tokens``, ... beside the other keys). In batch mode
            a blueprint's share of the batch call (tokens and time split evenly, the one call counted
            on the batch's first blueprint) plus its own calls asked alone.
        cost_usd: What those calls cost at the reviewer's price (``None``: no price).
        note: Extra remark (near-duplicate routed to human review, ...).
        committed: False when the review was written to the file but not committed.
    """

    model_config = ConfigDict(extra="forbid")

    blueprint_id: str
    status: Status
    total: int | None = None
    error: str | None = None
    cost_usd: float | None = None
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
        mode: ``slots`` (one call per blueprint) or ``batch`` (one call per batch of up to ten).
    """

    outcomes: list[ReviewOutcome] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    recovery: Recovery = field(default_factory=Recovery)
    commit_error: str | None = None
    not_started: list[str] = field(default_factory=list)
    mode: str = "slots"

    @property
    def usage(self) -> Usage:
        """Calls, tokens and model time of every review."""
        return Usage.total(o.usage for o in self.outcomes)

    @property
    def cost_usd(self) -> float | None:
        """US dollars of every review at the reviewer's price; ``None`` without a price."""
        costs = [o.cost_usd for o in self.outcomes if o.cost_usd is not None]
        return sum(costs) if costs else None

    @property
    def per_scored(self) -> PerItem | None:
        """Calls, tokens and cost per blueprint scored (``None`` when none was)."""
        scored = sum(1 for o in self.outcomes if o.total is not None)
        return PerItem.of(self.usage, scored, cost_usd=self.cost_usd)

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
    price: ModelPrice | None = None


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


def _save_failure(run: _ReviewRun, record: BlueprintRecord, error: str, replies: list[str]) -> None:
    """Keep a failed review's raw replies under ``.twinforge/failures/`` (no data is lost)."""
    stamp = utcnow().strftime("%Y%m%dT%H%M%S")
    run.workspace.write(
        f".twinforge/failures/review-{record.id}-{stamp}-{secrets.token_hex(2)}.json",
        json.dumps({"blueprint": record.id, "error": error, "replies": replies}, indent=2),
    )


def _failed(run: _ReviewRun, record: BlueprintRecord, error: str, replies: list[str], usage: Usage) -> ReviewOutcome:
    """A review that failed: its replies saved, the blueprint left proposed for the next run."""
    _save_failure(run, record, error, replies)
    return ReviewOutcome(
        blueprint_id=record.id, status=record.status, error=error, usage=usage, cost_usd=usage.cost(run.price)
    )


def _store_review(run: _ReviewRun, record: BlueprintRecord, review: Review, usage: Usage) -> ReviewOutcome:
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
    cost = usage.cost(run.price)
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
            blueprint_id=record.id,
            status=status,
            total=review.total,
            usage=usage,
            cost_usd=cost,
            note=note,
            committed=False,
        )
    if moved.after is moved.before:
        return ReviewOutcome(blueprint_id=record.id, status=moved.after or record.status, note=moved.note)
    # committed=False: the run stopped at a commit failure meanwhile; the next run commits it.
    return ReviewOutcome(
        blueprint_id=record.id,
        status=moved.after or record.status,
        total=review.total,
        usage=usage,
        cost_usd=cost,
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
    except StructuredOutputError as exc:
        return _failed(run, record, str(exc), exc.raws, exc.usage or Usage(calls=exc.attempts))
    except ModelCallError as exc:
        return _failed(run, record, str(exc), [], Usage())
    return _store_review(run, record, review, Usage.of(completions))


def _review_batch(run: _ReviewRun, records: list[BlueprintRecord]) -> list[tuple[str, ReviewOutcome | None]]:
    """Score up to ten blueprints in one call (docs/stage1.md, "One call per batch") and store each review."""
    if run.stop.is_set():
        return [(r.id, None) for r in records]
    try:
        scored = score_batch(
            run.chat, records, run.store, run.dimensions, run.thresholds, retries=run.retries, alone_prompt=run.prompt
        )
    except ModelCallError as exc:
        return [(r.id, _failed(run, r, str(exc), [], Usage())) for r in records]
    outcomes: list[tuple[str, ReviewOutcome | None]] = []
    for result in scored:
        record = result.record
        if result.review is None:
            outcome = _failed(run, record, result.error or "no review", result.replies, result.usage)
        else:
            outcome = _store_review(run, record, result.review, result.usage)
        outcomes.append((record.id, outcome))
    return outcomes


def batches_of(pending: list[BlueprintRecord], size: int = REVIEW_BATCH) -> list[list[BlueprintRecord]]:
    """``pending`` as batches of at most ``size`` blueprints of one cell, in the order the cells first appear."""
    cells: dict[str, list[BlueprintRecord]] = {}
    for record in pending:
        cells.setdefault(record.blueprint.taxonomy_id, []).append(record)
    return [group[i : i + size] for group in cells.values() for i in range(0, len(group), size)]


def review_pending(
    workspace: Workspace,
    *,
    chat: ChatModel | None = None,
    ids: list[str] | None = None,
    concurrency: int | None = None,
    mode: Literal["slots", "batch"] | None = None,
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
            server its slot count); in batch mode, batch calls in flight.
        mode: ``slots`` (one call per blueprint) or ``batch`` (one call per batch of up to ten
            blueprints of a cell, docs/stage1.md, "One call per batch"); default: the reviewer
            role's ``stage1_mode``.
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
    settings = workspace.config.models.reviewer
    report = ReviewReport(recovery=store.recover(), mode=mode or settings.stage1_calls())
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
        price=settings.price,
    )
    pending = _without_foreign_edits(workspace, store, _pending(store, ids, report), report)
    workers = concurrency or workspace.config.concurrency(settings)
    groups = batches_of(pending) if report.mode == "batch" else [[record] for record in pending]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="review") as pool:
        futures = [pool.submit(_review_group, run, group) for group in groups]
        for future in as_completed(futures):
            for blueprint_id, result in future.result():
                if result is None:
                    report.not_started.append(blueprint_id)
                    continue
                report.outcomes.append(result)
                if on_done:
                    on_done(result)
    return report


def _review_group(run: _ReviewRun, group: list[BlueprintRecord]) -> list[tuple[str, ReviewOutcome | None]]:
    """One blueprint in one call (slot mode), or a batch of blueprints in one call."""
    if run.report.mode == "batch":
        return _review_batch(run, group)
    return [(record.id, _review_one(run, record)) for record in group]


def _rel(store: BlueprintStore, blueprint_id: str) -> str:
    return str(store.path(blueprint_id).relative_to(store.workspace.root))
