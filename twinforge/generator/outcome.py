"""What one Stage I batch produced: its state while the slots are asked, and the records it stores.

Nothing a slot proposed is lost (docs/stage1.md, "Nothing proposed is lost"): a slot ends as a
blueprint to store with its doubts (:class:`Filled`), a reply to store refused with its findings
(:class:`Refused`), or a failure with nothing to store (the model refused, or it was not asked).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from dataclasses import dataclass, field

from twinforge.blueprints import (
    FIELDS,
    Blueprint,
    BlueprintRecord,
    BlueprintStore,
    Checked,
    Finding,
    Flag,
    FollowUp,
    Provenance,
    RefusedRecord,
    Status,
    TurnedBlueprint,
    closest,
    doubts,
    pool_finding,
    utcnow,
)
from twinforge.core.llm import Completion, ItemFailure, PerItem, Usage
from twinforge.generator.request import BatchRequest
from twinforge.generator.slots import Slot


@dataclass
class BatchReport:
    """What one batch produced.

    Attributes:
        batch_id: ``b-<hex>``.
        cell: Target cell.
        stored: Ids of the blueprints written as ``proposed``.
        with_doubts: Of those, the ids stored with doubts (a person will see them).
        refused: Ids of the proposals stored refused (a defect after the last re-ask).
        refused_by: Defect rule -> refused proposals it refused (one may count under several).
        flagged: Ids flagged as possibly repeating a stored blueprint's scenario.
        failures: Slots that produced nothing to store: the model refused, or they were not asked.
        first_time: Stored blueprints whose first reply was kept.
        after_reask: Stored blueprints kept after one or more re-asks.
        usage: Model calls made (one per slot plus re-asks, or one for the batch plus the slots asked
            alone), their tokens (with those the server took from its prompt cache) and model time
            summed over calls (more than the wall time when slots are asked at once).
        wall_seconds: Wall time of the batch's model calls.
        mode: ``slots`` (one call per slot) or ``batch`` (one call for the batch, docs/stage1.md).
        cost_usd: What the calls cost at the generator's price (``[models.generator.price]``);
            ``None`` when it has none.
        notes: Other remarks (slots sharing an incident, extra items dropped, ...).
        commit: The commit that stored the batch, if any.
        failures_file: Where the raw failed output was saved, if anything failed.
        replies: Every raw model reply of the batch (saved with failures).
        refusal: The model's refusal text when it declined (then nothing was re-asked).
        interrupted: The batch was interrupted (Ctrl-C) before its last slot; the filled slots are
            kept and stored, the rest are not asked.
    """

    batch_id: str
    cell: str
    replies: list[str] = field(default_factory=list)
    stored: list[str] = field(default_factory=list)
    with_doubts: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    refused_by: Counter[str] = field(default_factory=Counter)
    flagged: list[str] = field(default_factory=list)
    failures: list[ItemFailure] = field(default_factory=list)
    first_time: int = 0
    after_reask: int = 0
    usage: Usage = field(default_factory=Usage)
    wall_seconds: float = 0.0
    mode: str = "slots"
    cost_usd: float | None = None
    notes: list[str] = field(default_factory=list)
    commit: str | None = None
    failures_file: str | None = None
    refusal: str | None = None
    interrupted: bool = False

    @property
    def per_stored(self) -> PerItem | None:
        """Calls, tokens, wall time and cost per stored blueprint (``None`` when none was stored)."""
        return PerItem.of(self.usage, len(self.stored), wall_seconds=self.wall_seconds, cost_usd=self.cost_usd)


@dataclass
class Filled:
    """A slot's blueprint, to store as ``proposed`` with its doubts.

    ``prompt`` is the version of the prompt whose reply was kept when it is not the batch's slot
    prompt (the one call per batch's, docs/stage1.md, "One call per batch").
    """

    slot: Slot
    blueprint: Blueprint
    attempts: int
    doubts: list[Finding]
    raw: str
    prompt: str | None = None


@dataclass
class Refused:
    """A slot whose last reply had a defect, to store refused with its findings and the reply.

    ``prompt`` as for :class:`Filled`.
    """

    slot: Slot
    checked: Checked
    attempts: int
    raw: str
    prompt: str | None = None


class BatchState:
    """What the slots of one batch share while they are asked, behind one lock.

    Slots asked concurrently see the blueprints accepted so far (the repeat check), the tasks
    accepted so far (``shown_tasks``) and the worked examples still shown.
    """

    def __init__(self, request: BatchRequest, store: BlueprintStore) -> None:
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.accepted: list[tuple[str, Blueprint]] = []
        self.filled: list[Filled] = []
        self.refused: list[Refused] = []
        # A worked example a reply copied is not shown to the later slots of the batch (the local model
        # pasted a shown example again and again: docs/stage1.md, "Where the rules come from"). The
        # copy check still compares against it.
        self.dropped: set[str] = set()
        self.existing = sorted(
            (r for r in store.records() if r.blueprint.taxonomy_id == request.cell),
            key=lambda r: r.provenance.created_at,  # the latest last (ids are random)
        )
        self.report = BatchReport(batch_id=request.batch_id, cell=request.cell, notes=list(request.plan.notes))

    def taken(self, shown_tasks: int) -> list[str]:
        """The latest ``shown_tasks`` engineering tasks of the cell, stored ones then the batch's."""
        if not shown_tasks:
            return []
        with self.lock:
            tasks = [r.blueprint.engineering_task for r in self.existing] + [
                bp.engineering_task for _, bp in self.accepted
            ]
        return tasks[-shown_tasks:]

    def add_calls(self, raws: list[str], attempts: int, usage: Usage | None) -> None:
        """What a slot's calls spent (tokens too, when measured) and their replies."""
        with self.lock:
            self.report.replies += raws
            self.report.usage += usage if usage is not None else Usage(calls=attempts)

    def fill(self, filled: Filled, completions: list[Completion]) -> None:
        """Keep a slot's blueprint (unless the batch was interrupted meanwhile)."""
        with self.lock:
            if self.report.interrupted:
                return  # a reply that arrived after the interrupt: the batch is already closed
            self.report.replies += [c.raw for c in completions]
            self.report.usage += Usage.of(completions)
            self.filled.append(filled)

    def refuse(self, refused: Refused) -> None:
        """Keep a slot's last reply as refused (unless the batch was interrupted meanwhile)."""
        with self.lock:
            if not self.report.interrupted:
                self.refused.append(refused)

    def fail(self, failure: ItemFailure) -> None:
        """Record a slot that produced nothing to store."""
        with self.lock:
            self.report.failures.append(failure)

    def drop_copied(self, slot: Slot, copied: set[str]) -> None:
        """Stop showing the worked examples ``slot`` copied to the batch's later slots."""
        with self.lock:
            new = copied - self.dropped
            if new:
                self.report.notes.append(
                    f"slot {slot.number} copied the worked example {', '.join(sorted(new))}; "
                    "later slots were asked without it"
                )
                self.dropped |= new


def _provenance(
    model: str, prompt_version: str, request: BatchRequest, slot: Slot, attempts: int, prompt: str | None
) -> Provenance:
    return Provenance(
        batch=request.batch_id,
        model=model,
        prompt_version=prompt or prompt_version,
        sources=request.sources.label,
        sources_digest=request.sources.digest,
        created_at=utcnow(),
        slot=slot.number,
        setting=slot.setting,
        attempt=attempts,
    )


def to_records(
    model: str, prompt_version: str, store: BlueprintStore, request: BatchRequest, state: BatchState
) -> tuple[list[BlueprintRecord], list[RefusedRecord]]:
    """The filled slots as records in slot order, and the refused ones.

    A blueprint that repeats a stored one of its cell (wording or request) is refused too; one that
    may repeat a stored scenario in other words is stored with a ``same_scenario`` flag and that doubt.

    Args:
        model: ``provider:model`` of the generator, for provenance.
        prompt_version: The generation prompt's version id, for provenance.
        store: The workspace's blueprints (ids).
        request: The batch.
        state: What its slots produced.
    """

    def refused_record(refused: Refused) -> RefusedRecord:
        turned = refused.checked.blueprint
        return RefusedRecord(
            id=store.new_id(request.cell),
            cell=request.cell,
            fields=refused.checked.fields,
            reply=refused.raw,
            findings=refused.checked.findings,
            provenance=_provenance(model, prompt_version, request, refused.slot, refused.attempts, refused.prompt),
            refused_at=utcnow(),
            turns=request.turns,
            follow_ups=turned.follow_ups if isinstance(turned, TurnedBlueprint) else [],
        )

    report = state.report
    pool = [(r.id, r.blueprint) for r in state.existing]
    records: list[BlueprintRecord] = []
    refused = [refused_record(r) for r in state.refused]
    for filled in sorted(state.filled, key=lambda f: f.slot.number):
        bp, slot = filled.blueprint, filled.slot
        follow_ups: list[FollowUp] = []
        if isinstance(bp, TurnedBlueprint):
            bp, follow_ups = bp.split()
        found = list(filled.doubts)
        match = closest(bp, pool, request.threshold)
        if match is not None:
            found.append(pool_finding(match, request.rules))
            if match.is_duplicate:
                fields = {name: str(getattr(bp, name)) for name in FIELDS}
                late = Refused(
                    slot, Checked(filled.blueprint, fields, found), filled.attempts, filled.raw, filled.prompt
                )
                refused.append(refused_record(late))
                continue
        record = BlueprintRecord(
            id=store.new_id(bp.taxonomy_id),
            status=Status.PROPOSED,
            blueprint=bp,
            provenance=_provenance(model, prompt_version, request, slot, filled.attempts, filled.prompt),
            doubts=doubts(found),
            follow_ups=follow_ups,
        )
        if match is not None:
            record.flags = [
                Flag(
                    kind="same_scenario",
                    of=match.blueprint_id,
                    similarity=round(match.similarity, 1),
                    detail=match.reason,
                )
            ]
            report.flagged.append(record.id)
        pool.append((record.id, bp))
        records.append(record)
        report.stored.append(record.id)
        if record.doubts:
            report.with_doubts.append(record.id)
        if filled.attempts <= 1:
            report.first_time += 1
        else:
            report.after_reask += 1
    refused.sort(key=lambda r: r.provenance.slot or 0)
    for proposal in refused:
        report.refused.append(proposal.id)
        report.refused_by.update({f.rule for f in proposal.defects})
    report.failures.sort(key=lambda f: f.slot)
    return records, refused


def failures_json(report: BatchReport) -> str:
    """The raw output of failed slots and every reply, as saved under ``.twinforge/failures/`` (no data is lost)."""
    return json.dumps(
        {
            "batch": report.batch_id,
            "cell": report.cell,
            "failures": [{"slot": f.slot, "errors": f.errors, "raw": f.raw} for f in report.failures],
            "refused": report.refused,
            "replies": report.replies,
            "refusal": report.refusal,
            "notes": report.notes,
        },
        indent=2,
    )


def refused_line(refused: int, by: Counter[str] | dict[str, int]) -> str:
    """``2 refused (near-duplicate 1, pasted-example 1)``: how many and by which defect."""
    rules = ", ".join(f"{rule} {n}" for rule, n in sorted(by.items()))
    return f"{refused} refused" + (f" ({rules})" if rules else "")


def per_line(per: PerItem) -> str:
    """``1.3 calls, 1,204 tokens, 2.1 s, $0.0042``: what one stored blueprint cost on average."""
    parts = [f"{per.calls:g} calls", f"{per.tokens:,.0f} tokens"]
    if per.wall_seconds is not None:
        parts.append(f"{per.wall_seconds:.1f} s")
    if per.cost_usd is not None:
        parts.append(f"${per.cost_usd:.4f}")
    return ", ".join(parts)


def batch_message(report: BatchReport, model: str, request: BatchRequest) -> str:
    """The commit message of a batch: what it stored, with doubts, refused by which defect, failed."""
    doubted = f" ({len(report.with_doubts)} with doubts)" if report.with_doubts else ""
    refused = f", {refused_line(len(report.refused), report.refused_by)}" if report.refused else ""
    flagged = f", {len(report.flagged)} flagged as a possible repeat" if report.flagged else ""
    failed = f", {len(report.failures)} failed" if report.failures else ""
    prompts = request.prompt.version
    if report.mode == "batch":
        prompts = f"{request.batch_prompt.version} (one call for the batch; slots asked alone: {prompts})"
    return (
        f"generate: batch {report.batch_id}, {len(report.stored)} blueprints for {report.cell}{doubted}{refused}"
        f"{flagged}{failed}{' (interrupted)' if report.interrupted else ''}\n\n"
        f"model: {model}\nprompt: {prompts}\nsources: {request.sources.label} ({request.sources.digest})"
    )
