"""``generate``: run N Stage I batches into a workspace, one commit per batch (resumable by design)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from blueprints import BlueprintStore, Status
from generator.batch import BatchReport, failures_json, propose_batch
from generator.sources import default_sources, load_sources, pick_incidents
from twinforge.llm import ChatModel, make_chat_model
from twinforge.workspace import Recovery, Workspace

_NOT_LIVE = (Status.DISCARDED, Status.REJECTED)


@dataclass
class GenerateReport:
    """All batches of one ``generate`` call.

    Attributes:
        batches: One report per batch.
        recovery: What the start-of-run recovery committed or left alone.
        invalid: ``path: errors`` of blueprint files skipped because they do not validate.
    """

    batches: list[BatchReport] = field(default_factory=list)
    recovery: Recovery = field(default_factory=Recovery)
    invalid: list[str] = field(default_factory=list)

    @property
    def stored(self) -> int:
        """Blueprints written."""
        return sum(len(b.stored) for b in self.batches)

    @property
    def failed(self) -> int:
        """Requested slots that never validated."""
        return sum(len(b.failures) for b in self.batches)


def emptiest_cell(store: BlueprintStore) -> str:
    """The cell with the fewest live blueprints (not discarded or rejected); ties go to taxonomy order."""
    counts = dict.fromkeys(store.taxonomy.cells(), 0)
    for record in store.records():
        if record.status not in _NOT_LIVE and record.blueprint.taxonomy_id in counts:
            counts[record.blueprint.taxonomy_id] += 1
    return min(counts, key=lambda c: counts[c])


def generate(
    workspace: Workspace,
    *,
    cell: str | None = None,
    batches: int = 1,
    sources: Path | None = None,
    chat: ChatModel | None = None,
    on_batch_start: Callable[[int, str], None] | None = None,
    on_batch_done: Callable[[BatchReport], None] | None = None,
) -> GenerateReport:
    """Generate ``batches`` batches of 10 blueprints and commit each batch as it completes.

    Args:
        workspace: Target workspace.
        cell: Cell for every batch; ``None`` picks the emptiest cell before each batch.
        batches: How many batches.
        sources: Incident file (default: ``[generator] sources`` or the bundled corpus).
        chat: Model (default: built from ``[models.generator]``).
        on_batch_start: Called with ``(batch_number, cell)`` before each model call.
        on_batch_done: Called with each batch report after its commit.

    Returns:
        The report of every batch.

    Raises:
        TaxonomyError: ``cell`` names no taxonomy cell.
        SourcesError: The sources file is invalid.
        ModelCallError: The model endpoint failed after retries (earlier batches stay committed).
        RepositoryStateError: The repository cannot take commits now (before any model call).
    """
    workspace.check_ready()
    store = BlueprintStore(workspace)
    recovery = store.recover()
    if cell is not None:
        store.taxonomy.split(cell)
    settings = workspace.config.models.generator
    sources_path = sources or workspace.config.generator.sources or default_sources()
    sources_label = "guidelines/sources/incidents.yaml" if sources_path == default_sources() else str(sources_path)
    incidents = load_sources(sources_path)
    chat = chat or make_chat_model(settings, role="generator")
    report = GenerateReport(recovery=recovery)
    for number in range(1, batches + 1):
        target = cell or emptiest_cell(store)
        _, risk = store.taxonomy.split(target)
        shown = pick_incidents(incidents, risk.id, workspace.config.generator.incidents_per_prompt, number - 1)
        if on_batch_start:
            on_batch_start(number, target)
        records, batch = propose_batch(
            chat,
            store,
            cell=target,
            incidents=shown,
            sources_label=sources_label,
            threshold=workspace.config.generator.near_duplicate_threshold,
            retries=settings.validation_retries,
        )
        if batch.failures:
            rel = f".twinforge/failures/{batch.batch_id}.json"
            workspace.write(rel, failures_json(batch))
            batch.failures_file = rel
        if records:
            flagged = f", {len(batch.flagged)} flagged near-duplicate" if batch.flagged else ""
            failed = f", {len(batch.failures)} failed validation" if batch.failures else ""
            batch.commit = store.save(
                records,
                f"generate: batch {batch.batch_id}, {len(records)} blueprints for {target}{flagged}{failed}\n\n"
                f"model: {chat.name}\nprompt: {records[0].provenance.prompt_version}\n"
                f"sources: {records[0].provenance.sources}",
            )
        report.batches.append(batch)
        report.invalid = [str(exc) for exc in store.skipped.values()]
        if on_batch_done:
            on_batch_done(batch)
    return report
