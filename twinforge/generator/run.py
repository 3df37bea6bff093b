"""``generate``: run N Stage I batches into a workspace, one commit per batch (resumable by design)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from twinforge.blueprints import BlueprintStore, Status
from twinforge.core.llm import ChatModel, FlatUsage, PerItem, Usage, make_chat_model
from twinforge.core.recovery import Recovery
from twinforge.core.spend import SpendMeter
from twinforge.core.workspace import Workspace
from twinforge.generator.batch import BATCH_SIZE, journal_header, propose_batch
from twinforge.generator.contexts import load_contexts
from twinforge.generator.examples import examples_for, load_examples
from twinforge.generator.journal import ReplyJournal
from twinforge.generator.outcome import BatchReport, batch_message, failures_json
from twinforge.generator.recover import recover_replies
from twinforge.generator.request import BatchRequest, SourcesInfo
from twinforge.generator.slots import plan_slots
from twinforge.generator.sources import cell_counts, default_sources, load_sources, sources_digest, sources_label

_NOT_LIVE = (Status.DISCARDED, Status.REJECTED)
THIN_CELL = 10  # `generate` names the cells with fewer than ten incidents


@dataclass
class GenerateReport:
    """All batches of one ``generate`` call.

    Attributes:
        batches: One report per batch.
        sources: The incident list used, as provenance records it.
        thin_cells: Cells with fewer than ten grounding incidents in that list, with their counts.
        recovery: What the start-of-run recovery committed or left alone.
        invalid: ``path: errors`` of blueprint files skipped because they do not validate.
        recovered: What the start-of-run recovery stored from the replies of batches a killed
            process never stored, one line per batch.
        spend_stop: Why batches were not started: the spend ceiling (``[spend] ceiling_usd``) was reached.
    """

    batches: list[BatchReport] = field(default_factory=list)
    sources: SourcesInfo | None = None
    thin_cells: dict[str, int] = field(default_factory=dict)
    recovery: Recovery = field(default_factory=Recovery)
    invalid: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    spend_stop: str | None = None

    @property
    def usage(self) -> Usage:
        """Calls, tokens and model time of every batch."""
        return Usage.total(b.usage for b in self.batches)

    @property
    def cost_usd(self) -> float | None:
        """US dollars of every batch at the generator's price; ``None`` without a price."""
        costs = [b.cost_usd for b in self.batches if b.cost_usd is not None]
        return sum(costs) if costs else None

    @property
    def per_stored(self) -> PerItem | None:
        """Calls, tokens, wall time and cost per stored blueprint over every batch (``None``: none stored)."""
        wall = sum(b.wall_seconds for b in self.batches)
        return PerItem.of(self.usage, self.stored, wall_seconds=wall, cost_usd=self.cost_usd)

    @property
    def stored(self) -> int:
        """Blueprints written."""
        return sum(len(b.stored) for b in self.batches)

    @property
    def failed(self) -> int:
        """Requested slots that produced nothing to store (the model refused, or they were not asked)."""
        return sum(len(b.failures) for b in self.batches)

    @property
    def refused(self) -> int:
        """Proposals stored refused."""
        return sum(len(b.refused) for b in self.batches)


class SlotFailureSummary(BaseModel):
    """One slot that produced nothing to store, as ``generate --json`` prints it.

    Its raw replies stay in the failures file.
    """

    model_config = ConfigDict(extra="forbid")

    slot: int
    errors: list[str]


class BatchSummary(FlatUsage):
    """One batch as ``generate --json`` prints it: the :class:`BatchReport` without the raw replies.

    The usage fields (``calls``, ``prompt_tokens``, ``cached_tokens``, ``completion_tokens``,
    ``seconds``) are printed flat beside the others; seconds are rounded to 10 ms.
    """

    model_config = ConfigDict(extra="forbid")

    batch: str
    cell: str
    stored: list[str]
    with_doubts: list[str]
    refused: list[str]
    refused_by: dict[str, int]
    flagged: list[str]
    first_time: int
    after_reask: int
    failures: list[SlotFailureSummary]
    wall_seconds: float
    mode: str
    cost_usd: float | None
    per_stored: PerItem | None
    commit: str | None
    failures_file: str | None
    refusal: str | None
    notes: list[str]

    @classmethod
    def of(cls, report: BatchReport) -> BatchSummary:
        """The printed form of ``report``."""
        return cls(
            batch=report.batch_id,
            cell=report.cell,
            stored=report.stored,
            with_doubts=report.with_doubts,
            refused=report.refused,
            refused_by=dict(sorted(report.refused_by.items())),
            flagged=report.flagged,
            first_time=report.first_time,
            after_reask=report.after_reask,
            failures=[SlotFailureSummary(slot=f.slot, errors=f.errors) for f in report.failures],
            usage=report.usage.model_copy(update={"seconds": round(report.usage.seconds, 2)}),
            wall_seconds=round(report.wall_seconds, 2),
            mode=report.mode,
            cost_usd=None if report.cost_usd is None else round(report.cost_usd, 6),
            per_stored=report.per_stored,
            commit=report.commit,
            failures_file=report.failures_file,
            refusal=report.refusal,
            notes=report.notes,
        )


class GenerateSummary(BaseModel):
    """What ``generate --json`` prints: the incident list, its thin cells and every batch."""

    model_config = ConfigDict(extra="forbid")

    sources: str | None
    """The incident list's label (``bundled:...`` or a path)."""
    sources_digest: str | None
    thin_cells: dict[str, int]
    batches: list[BatchSummary]
    recovered: list[str]
    stored: int
    """Blueprints stored by every batch."""
    cost_usd: float | None
    """US dollars of every batch at the generator's price (``None``: no price)."""
    per_stored: PerItem | None
    """Calls, tokens, wall time and cost per stored blueprint over every batch."""
    spend_stop: str | None

    @classmethod
    def of(cls, report: GenerateReport) -> GenerateSummary:
        """The printed form of ``report``."""
        return cls(
            sources=report.sources.label if report.sources else None,
            sources_digest=report.sources.digest if report.sources else None,
            thin_cells=report.thin_cells,
            batches=[BatchSummary.of(b) for b in report.batches],
            recovered=report.recovered,
            stored=report.stored,
            cost_usd=None if report.cost_usd is None else round(report.cost_usd, 6),
            per_stored=report.per_stored,
            spend_stop=report.spend_stop,
        )


def emptiest_cell(store: BlueprintStore, cells: Iterable[str] | Mapping[str, int] | None = None) -> str:
    """The cell with the fewest live blueprints (not discarded or rejected).

    Ties go to the cell the incident list grounds best (most incidents, when ``cells`` maps cells to
    incident counts), then to taxonomy order: each of a batch's ten slots needs its own incident (Stage I
    grounding rule, docs/stage1.md), so among equally empty cells the best-grounded one gives the most
    distinct grounding.

    Args:
        store: The workspace's blueprints.
        cells: Only these cells (e.g. those the incident list can ground); a mapping also gives each
            cell's incident count for the tie-break. Default: every cell, taxonomy order.
    """
    grounding = dict(cells) if isinstance(cells, Mapping) else {}
    allowed = set(cells) if cells is not None else None
    order = [c for c in store.taxonomy.cells() if allowed is None or c in allowed]
    counts = dict.fromkeys(order, 0)
    for record in store.records():
        if record.status not in _NOT_LIVE and record.blueprint.taxonomy_id in counts:
            counts[record.blueprint.taxonomy_id] += 1
    return min(order, key=lambda c: (counts[c], -grounding.get(c, 0), order.index(c)))


def generate(
    workspace: Workspace,
    *,
    cell: str | None = None,
    batches: int = 1,
    sources: Path | None = None,
    chat: ChatModel | None = None,
    concurrency: int | None = None,
    mode: Literal["slots", "batch"] | None = None,
    on_start: Callable[[GenerateReport], None] | None = None,
    on_batch_start: Callable[[int, str], None] | None = None,
    on_batch_done: Callable[[BatchReport], None] | None = None,
    on_slot: Callable[[int, int], None] | None = None,
    turns: int = 1,
) -> GenerateReport:
    """Generate ``batches`` batches of 10 blueprints and commit each batch as it completes.

    The incident list is validated as a whole before any model call (docs/stage1.md). Every reply
    is journaled as it arrives; batches a killed process never stored are stored first, from their
    journals (:func:`recover_replies`). A batch stores each slot's blueprint (with its doubts) or its
    refused reply (with its findings) in one commit. Each batch's cost is counted at the generator's
    price; once the spend ceiling (``[spend] ceiling_usd``) is reached no new batch starts.

    Args:
        workspace: Target workspace.
        cell: Cell for every batch; ``None`` picks the emptiest cell the list can ground before each batch.
        batches: How many batches.
        sources: Incident file (default: ``[generator] sources`` or the bundled corpus).
        chat: Model (default: built from ``[models.generator]``).
        concurrency: Slots of a batch asked at once (default: the generator role's concurrency,
            for the embedded server its slot count; docs/stage1.md).
        mode: ``slots`` (one call per slot) or ``batch`` (one call per batch, docs/stage1.md, "One
            call per batch"); default: the generator role's ``stage1_mode``.
        on_start: Called once with the (empty) report after the list validated: sources and thin cells.
        on_batch_start: Called with ``(batch_number, cell)`` before each model call.
        on_batch_done: Called with each batch report after its commit.
        on_slot: Called with ``(slot_number, slots)`` before each slot's model call (from worker
            threads when slots are asked at once).
        turns: User turns per blueprint; above 1 each blueprint also carries ``follow_ups``, its
            later turns (docs/stage1.md, "Multi-turn blueprints").

    Returns:
        The report of every batch.

    Raises:
        TaxonomyError: ``cell`` names no taxonomy cell.
        SourcesError: The incident list is invalid (every bad entry named), or it has no incident
            about the cell's risk.
        ModelCallError: The model endpoint failed after retries (earlier batches stay committed; the
            failed batch's replies stay in its journal and the next run stores them).
        RepositoryStateError: The repository cannot take commits now (before any model call).
        KeyboardInterrupt: Interrupted (Ctrl-C); the interrupted batch's filled slots were
            committed first (and its failures saved), later batches are not started.
    """
    workspace.check_ready()
    store = BlueprintStore(workspace)
    recovery = store.recover()
    recovered = recover_replies(store)
    if cell is not None:
        store.taxonomy.split(cell)
    settings = workspace.config.models.generator
    sources_path = sources or workspace.config.generator.sources or default_sources()
    incidents = load_sources(sources_path, store.taxonomy)
    info = SourcesInfo(sources_label(sources_path, workspace.root), sources_digest(sources_path))
    counts = cell_counts(incidents, store.taxonomy)
    report = GenerateReport(
        sources=info,
        thin_cells={c: n for c, n in counts.items() if n < THIN_CELL},
        recovery=recovery,
        recovered=recovered,
    )
    groundable = {c: n for c, n in counts.items() if n > 0}
    examples = load_examples()
    project_settings = load_contexts()
    if on_start:
        on_start(report)
    chat = chat or make_chat_model(settings, role="generator")
    calls = mode or settings.stage1_calls()
    if turns > 1:  # the one-call batch prompt asks for no later turns (docs/stage1.md, "One call per batch")
        calls = "slots"
    meter = SpendMeter(workspace.config.spend.ceiling_usd)
    for number in range(1, batches + 1):
        if not meter.allows_new_run():
            report.spend_stop = (
                f"spend ceiling of ${meter.ceiling_usd:.2f} reached (${meter.spent_usd:.2f} spent): "
                f"{batches - number + 1} batch(es) not started"
            )
            break
        target = cell or emptiest_cell(store, groundable)
        source, risk = store.taxonomy.split(target)
        done = sum(1 for r in store.records() if r.blueprint.taxonomy_id == target)
        plan = plan_slots(
            incidents,
            source=source.id,
            risk=risk.id,
            settings=project_settings,
            count=BATCH_SIZE,
            offset=done // BATCH_SIZE,
        )
        if on_batch_start:
            on_batch_start(number, target)
        request = BatchRequest(
            cell=target,
            plan=plan,
            examples=examples_for(target, examples, turns),
            sources=info,
            threshold=workspace.config.generator.near_duplicate_threshold,
            shown_tasks=workspace.config.generator.shown_tasks,
            retries=settings.validation_retries,
            concurrency=concurrency or workspace.config.concurrency(settings),
            reask_doubts=workspace.config.generator.reask_doubts and calls == "slots",
            mode=calls,
            turns=turns,
        )
        journal = ReplyJournal.start(workspace, request.batch_id, journal_header(request, chat.name))
        request = replace(request, journal=journal)
        records, refused, batch = propose_batch(chat, store, request, on_slot=on_slot)
        batch.cost_usd = batch.usage.cost(settings.price)
        meter.add(batch.cost_usd or 0.0)
        if batch.failures or batch.refused:  # every raw reply of the batch, beside the journal
            rel = f".twinforge/failures/{batch.batch_id}.json"
            workspace.write(rel, failures_json(batch))
            batch.failures_file = rel
        if records or refused:
            batch.commit = store.save(records, batch_message(batch, chat.name, request), refused)
        journal.close(batch.commit)
        report.batches.append(batch)
        report.invalid = [str(exc) for exc in store.skipped.values()]
        if on_batch_done:
            on_batch_done(batch)
        if batch.interrupted:
            raise KeyboardInterrupt  # after the filled slots were committed: the CLI exits 130
    return report
