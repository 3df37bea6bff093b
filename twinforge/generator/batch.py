"""One Stage I batch: ten slots, each grounded in its own incident and asked on its own, several at once."""

from __future__ import annotations

import copy
import json
import queue
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from twinforge.blueprints import (
    FIELDS,
    Blueprint,
    BlueprintRecord,
    BlueprintStore,
    Checked,
    CheckRules,
    Finding,
    Flag,
    Provenance,
    RefusedRecord,
    Status,
    actions_of_risk,
    closest,
    doubts,
    pool_finding,
    utcnow,
)
from twinforge.core.exceptions import ModelCallError, ModelRefusal, StructuredOutputError
from twinforge.core.llm import ChatModel, Completion, ItemFailure, Usage, refusal_message, request_object
from twinforge.core.prompts import Prompt
from twinforge.generator.examples import WorkedExample
from twinforge.generator.journal import JournaledChat, ReplyJournal
from twinforge.generator.slotchecks import SlotJudge
from twinforge.generator.slots import Slot, SlotPlan

BATCH_SIZE = 10  # docs/stage1.md: "An LLM proposes them in batches of 10"


@dataclass(frozen=True)
class SourcesInfo:
    """Which incident list grounded a batch, as provenance records it.

    Attributes:
        label: ``bundled:...``, a workspace-relative path, or ``<name> (outside the workspace)``.
        digest: ``sha256:<hex>`` of the list's bytes.
    """

    label: str
    digest: str


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
        usage: Model calls made (one per slot plus re-asks), their tokens (with those the server
            took from its prompt cache) and model time summed over calls (more than the wall time
            when slots are asked at once).
        wall_seconds: Wall time of the batch's model calls.
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
    notes: list[str] = field(default_factory=list)
    commit: str | None = None
    failures_file: str | None = None
    refusal: str | None = None
    interrupted: bool = False


def slot_schema(cell: str, ref: str) -> dict[str, Any]:
    """The Blueprint JSON schema for one slot: ``taxonomy_id`` fixed to ``cell``, ``source_reference`` to ``ref``.

    Grammar-constrained servers (llama.cpp) can then only cite the slot's own incident.
    """
    schema = copy.deepcopy(Blueprint.model_json_schema())
    schema["properties"]["taxonomy_id"] = {"type": "string", "enum": [cell]}
    schema["properties"]["source_reference"] = {"type": "string", "enum": [ref]}
    schema["additionalProperties"] = False
    return schema


@dataclass(frozen=True)
class BatchRequest:
    """What one batch asks for: the cell, its slots and the rules every slot is held to.

    Attributes:
        cell: Target cell, e.g. ``S2-R3``.
        plan: The batch's slots.
        examples: Worked examples shown in the prompt.
        sources: The incident list, as provenance records it.
        threshold: Near-duplicate wording threshold 0-100 (``[generator] near_duplicate_threshold``).
        retries: Re-asks per slot (``validation_retries`` of the generator role).
        shown_tasks: Engineering tasks already written for the cell that the prompt lists, the latest
            (stored ones by creation time, then this batch's); 0 lists none (``[generator] shown_tasks``).
        concurrency: Slots asked at once (the generator role's concurrency; for the embedded server its
            slot count). 1 asks them in order, each seeing the ones before it.
        reask_doubts: Re-ask a reply with a doubt while re-asks remain (``[generator] reask_doubts``).
        prompt: Template pair (default ``generate``).
        rules: Check rules (default: the bundled file).
        journal: Where each reply is written as it arrives (``None``: not journaled).
        batch_id: The batch's id, ``b-<hex>``.
    """

    cell: str
    plan: SlotPlan
    examples: list[WorkedExample]
    sources: SourcesInfo
    threshold: float
    retries: int = 2
    shown_tasks: int = 0
    concurrency: int = 1
    reask_doubts: bool = True
    prompt: Prompt = field(default_factory=lambda: Prompt("generate"))
    rules: CheckRules | None = None
    journal: ReplyJournal | None = None
    batch_id: str = field(default_factory=lambda: f"b-{secrets.token_hex(4)}")


@dataclass
class Filled:
    """A slot's blueprint, to store as ``proposed`` with its doubts."""

    slot: Slot
    blueprint: Blueprint
    attempts: int
    doubts: list[Finding]
    raw: str


@dataclass
class Refused:
    """A slot whose last reply had a defect, to store refused with its findings and the reply."""

    slot: Slot
    checked: Checked
    attempts: int
    raw: str


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


def _shown_examples(examples: list[WorkedExample]) -> list[dict[str, Any]]:
    return [
        {
            "pair": e.pair,
            "kind": "reference pair" if e.reference else "worked example",
            "cell": e.blueprint.taxonomy_id,
            "fields": [(f, getattr(e.blueprint, f)) for f in FIELDS[:6]],
        }
        for e in examples
    ]


def _ask_slot(chat: ChatModel, store: BlueprintStore, request: BatchRequest, state: BatchState, slot: Slot) -> bool:
    """Ask one slot (re-asked on defects, and on doubts while re-asks remain) and record the outcome.

    The outcome is one of: a blueprint to store (the first reply without a doubt, or the last one
    without a defect, with its doubts), the last reply to store refused (every reply had a defect),
    or a failure (the model refused; nothing to store).

    Returns:
        False when the slot was not asked because the batch stopped meanwhile.

    Raises:
        ModelCallError: Transport failure of the slot's first call.
    """
    if state.stop.is_set():
        return False
    source, risk = store.taxonomy.split(request.cell)
    with state.lock:
        examples = [e for e in _shown_examples(request.examples) if e["pair"] not in state.dropped]
    messages = request.prompt.render(
        count=len(request.plan.slots),
        cell=request.cell,
        source=source,
        risk=risk,
        slot=slot,
        examples=examples,
        taken=state.taken(request.shown_tasks),
        harm_examples=[t.example for t in actions_of_risk(risk.id) if t.example],
    )
    judge = SlotJudge(
        request.cell,
        slot,
        state.accepted,
        request.examples,
        request.threshold,
        request.rules,
        store.taxonomy,
        reask_doubts=request.reask_doubts,
        lock=state.lock,
    )
    asked: ChatModel = chat if request.journal is None else JournaledChat(chat, request.journal, slot)
    try:
        result = request_object(
            asked,
            messages,
            Blueprint,
            schema=slot_schema(request.cell, slot.incident.ref),
            schema_name="blueprint",
            retries=request.retries,
            context={"taxonomy": store.taxonomy},
            check=judge.check,
        )
    except ModelRefusal as exc:
        # A refusal is not re-asked; the slot fails with the model's words, the batch goes on.
        state.report.refusal = exc.refusal
        state.fail(ItemFailure(slot.number, [refusal_message(exc.refusal)], exc.raws[-1]))
        state.add_calls(exc.raws, exc.attempts, exc.usage)
        return True
    except StructuredOutputError as exc:
        state.add_calls(exc.raws, exc.attempts, exc.usage)
        kept = judge.settle()
        if kept is not None:  # the last reply without a defect, kept with its doubts
            state.fill(Filled(slot, kept[0], exc.attempts, kept[1], exc.raw), [])
        else:
            state.refuse(Refused(slot, judge.judge_reply(exc.raw), exc.attempts, exc.raw))
        return True
    finally:
        state.drop_copied(slot, judge.copied)
    found = judge.candidate[1] if judge.candidate and judge.candidate[0] is result.value else []
    state.fill(
        Filled(slot, result.value, len(result.completions), found, result.completions[-1].raw), result.completions
    )
    return True


def _ask_slots(
    chat: ChatModel,
    store: BlueprintStore,
    request: BatchRequest,
    state: BatchState,
    on_slot: Callable[[int, int], None] | None,
) -> None:
    """Ask every slot, ``request.concurrency`` at once; stop at a transport failure or an interrupt.

    The askers are daemon threads: after an interrupt (Ctrl-C) the filled slots are kept and the
    command exits without waiting for the calls still in flight, whose replies are dropped.

    Raises:
        ModelCallError: Transport failure before any slot was filled.
    """
    slots = request.plan.slots
    waiting: queue.SimpleQueue[Slot] = queue.SimpleQueue()
    for slot in slots:
        waiting.put(slot)
    results: queue.SimpleQueue[tuple[Slot, bool, BaseException | None]] = queue.SimpleQueue()

    def asker() -> None:
        while True:
            try:
                slot = waiting.get_nowait()
            except queue.Empty:
                return
            try:
                if on_slot and not state.stop.is_set():
                    on_slot(slot.number, len(slots))
                results.put((slot, _ask_slot(chat, store, request, state, slot), None))
            except BaseException as exc:  # KeyboardInterrupt from a responder too: the batch stops
                state.stop.set()
                results.put((slot, False, exc))

    for number in range(min(max(1, request.concurrency), len(slots))):
        threading.Thread(target=asker, name=f"slot-asker-{number}", daemon=True).start()
    asked: set[int] = set()
    error: ModelCallError | None = None
    failed_at = 0
    try:
        for _ in slots:
            slot, was_asked, exc = results.get()
            if isinstance(exc, ModelCallError):
                if error is None:
                    error, failed_at = exc, slot.number
            elif exc is not None:
                raise exc
            elif was_asked:
                asked.add(slot.number)
    except KeyboardInterrupt:
        # A batch is ten calls of up to a minute each: an interrupt keeps the slots already filled.
        state.stop.set()
        with state.lock:
            state.report.interrupted = True
            done = len(state.filled)
        state.report.notes.append(f"interrupted after {done} of {len(slots)} slot(s); the filled ones are kept")
        return
    if error is not None:
        if not state.filled:
            raise error
        unasked = [s for s in slots if s.number not in asked]
        state.report.notes.append(
            f"model call failed at slot {failed_at}: {error}; {len(unasked)} slot(s) were not asked"
        )
        state.report.failures += [ItemFailure(s.number, [f"not asked: {error}"], "") for s in unasked]


def _provenance(model: str, prompt_version: str, request: BatchRequest, slot: Slot, attempts: int) -> Provenance:
    return Provenance(
        batch=request.batch_id,
        model=model,
        prompt_version=prompt_version,
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
        return RefusedRecord(
            id=store.new_id(request.cell),
            cell=request.cell,
            fields=refused.checked.fields,
            reply=refused.raw,
            findings=refused.checked.findings,
            provenance=_provenance(model, prompt_version, request, refused.slot, refused.attempts),
            refused_at=utcnow(),
        )

    report = state.report
    pool = [(r.id, r.blueprint) for r in state.existing]
    records: list[BlueprintRecord] = []
    refused = [refused_record(r) for r in state.refused]
    for filled in sorted(state.filled, key=lambda f: f.slot.number):
        bp, slot = filled.blueprint, filled.slot
        found = list(filled.doubts)
        match = closest(bp, pool, request.threshold)
        if match is not None:
            found.append(pool_finding(match, request.rules))
            if match.is_duplicate:
                fields = {name: str(getattr(bp, name)) for name in FIELDS}
                late = Refused(slot, Checked(bp, fields, found), filled.attempts, filled.raw)
                refused.append(refused_record(late))
                continue
        record = BlueprintRecord(
            id=store.new_id(bp.taxonomy_id),
            status=Status.PROPOSED,
            blueprint=bp,
            provenance=_provenance(model, prompt_version, request, slot, filled.attempts),
            doubts=doubts(found),
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


def propose_batch(
    chat: ChatModel,
    store: BlueprintStore,
    request: BatchRequest,
    *,
    on_slot: Callable[[int, int], None] | None = None,
) -> tuple[list[BlueprintRecord], list[RefusedRecord], BatchReport]:
    """Ask the model for one batch of blueprints, one call per slot, and turn every reply into a record.

    Each slot has its own incident and project setting (:mod:`twinforge.generator.slots`) and is
    asked on its own, ``request.concurrency`` slots at once (the embedded server decodes them
    together); its schema fixes ``source_reference`` to the slot's incident. A reply is re-asked
    (problems fed back, at most ``request.retries`` times) when it has a defect, or a doubt while
    doubts are re-asked (:mod:`twinforge.generator.slotchecks`). Nothing a slot proposed is lost:
    its blueprint is stored with its doubts, or its last reply is stored refused with its findings;
    only a model refusal or a slot never asked is an :class:`ItemFailure`. A blueprint repeating a
    stored one of the cell is refused; one that may repeat a stored scenario is flagged.

    Args:
        chat: Generator model.
        store: The workspace's blueprints (for ids and near-duplicate checks).
        request: The cell, slots and rules.
        on_slot: Called with ``(slot_number, slots)`` as each slot is asked (progress; from the
            worker threads when slots are asked at once).

    Returns:
        The new records and the refused proposals (neither saved yet), in slot order, and the report.

    Raises:
        ModelCallError: Transport failure before any slot was filled (after that, the slots not yet
            asked are reported as failed and the filled ones kept).
    """
    state = BatchState(request, store)
    started = time.monotonic()
    _ask_slots(chat, store, request, state, on_slot)
    state.report.wall_seconds = time.monotonic() - started
    with state.lock:
        records, refused = to_records(chat.name, request.prompt.version, store, request, state)
    return records, refused, state.report


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


def batch_message(report: BatchReport, model: str, request: BatchRequest) -> str:
    """The commit message of a batch: what it stored, with doubts, refused by which defect, failed."""
    doubted = f" ({len(report.with_doubts)} with doubts)" if report.with_doubts else ""
    refused = f", {refused_line(len(report.refused), report.refused_by)}" if report.refused else ""
    flagged = f", {len(report.flagged)} flagged as a possible repeat" if report.flagged else ""
    failed = f", {len(report.failures)} failed" if report.failures else ""
    return (
        f"generate: batch {report.batch_id}, {len(report.stored)} blueprints for {report.cell}{doubted}{refused}"
        f"{flagged}{failed}{' (interrupted)' if report.interrupted else ''}\n\n"
        f"model: {model}\nprompt: {request.prompt.version}\nsources: {request.sources.label} ({request.sources.digest})"
    )


def journal_header(request: BatchRequest, model: str) -> dict[str, Any]:
    """The first line of a batch's replies journal: what recovery needs to store its replies."""
    return {
        "cell": request.cell,
        "model": model,
        "prompt": request.prompt.version,
        "sources": request.sources.label,
        "sources_digest": request.sources.digest,
        "threshold": request.threshold,
    }
