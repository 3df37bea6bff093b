"""One Stage I batch: ten slots, each grounded in its own incident and asked on its own, several at once."""

from __future__ import annotations

import copy
import json
import queue
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from twinforge.blueprints import (
    FIELDS,
    Blueprint,
    BlueprintRecord,
    BlueprintStore,
    CheckRules,
    Flag,
    FollowUp,
    Provenance,
    Status,
    TurnedBlueprint,
    actions_of_risk,
    closest,
    follow_up_findings,
    utcnow,
)
from twinforge.core.exceptions import ModelCallError, ModelRefusal, StructuredOutputError
from twinforge.core.llm import ChatModel, ItemFailure, ObjectResult, Usage, refusal_message, request_object
from twinforge.core.prompts import Prompt
from twinforge.generator.examples import WorkedExample
from twinforge.generator.slotchecks import slot_checker
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
        stored: Ids of the blueprints written.
        flagged: Ids flagged as near-duplicates.
        failures: Slots that never validated, with their errors.
        first_time: Stored blueprints that passed validation and the checks in the first reply.
        after_reask: Stored blueprints that passed only after one or more re-asks.
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
        prompt: Template pair (default ``generate``).
        rules: Check rules (default: the bundled file).
        turns: User turns each blueprint has (``generate --turns N``): above 1, each slot also
            answers ``follow_ups``, the later turns, kept beside the eight fields (docs/stage1.md,
            "Multi-turn blueprints").
    """

    cell: str
    plan: SlotPlan
    examples: list[WorkedExample]
    sources: SourcesInfo
    threshold: float
    retries: int = 2
    shown_tasks: int = 0
    concurrency: int = 1
    prompt: Prompt = field(default_factory=lambda: Prompt("generate"))
    rules: CheckRules | None = None
    turns: int = 1


@dataclass
class _Filled:
    slot: Slot
    blueprint: Blueprint
    attempts: int


class _BatchState:
    """What the slots of one batch share while they are asked, behind one lock.

    Slots asked concurrently see the blueprints accepted so far (the repeat check), the tasks
    accepted so far (``shown_tasks``) and the worked examples still shown.
    """

    def __init__(self, request: BatchRequest, store: BlueprintStore) -> None:
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.accepted: list[tuple[str, Blueprint]] = []
        self.filled: list[_Filled] = []
        # A worked example a reply copied is not shown to the later slots of the batch (the local model
        # pasted a shown example again and again: docs/stage1.md, "Where the rules come from"). The
        # copy check still compares against it.
        self.dropped: set[str] = set()
        self.existing = sorted(
            (r for r in store.records() if r.blueprint.taxonomy_id == request.cell),
            key=lambda r: r.provenance.created_at,  # the latest last (ids are random)
        )
        self.report = BatchReport(
            batch_id=f"b-{secrets.token_hex(4)}", cell=request.cell, notes=list(request.plan.notes)
        )

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
        """A failed slot's replies and what its calls spent (tokens too, when measured)."""
        with self.lock:
            self.report.replies += raws
            self.report.usage += usage if usage is not None else Usage(calls=attempts)

    def fill(self, slot: Slot, result: ObjectResult[Blueprint]) -> None:
        completions = result.completions
        with self.lock:
            report = self.report
            if report.interrupted:
                return  # a reply that arrived after the interrupt: the batch is already closed
            report.replies += [c.raw for c in completions]
            report.usage += Usage.of(completions)
            self.filled.append(_Filled(slot, result.value, len(completions)))

    def fail(self, failure: ItemFailure) -> None:
        with self.lock:
            self.report.failures.append(failure)

    def drop_copied(self, slot: Slot, copied: set[str]) -> None:
        with self.lock:
            new = copied - self.dropped
            if new:
                self.report.notes.append(
                    f"slot {slot.number} copied the worked example {', '.join(sorted(new))}; "
                    "later slots were asked without it"
                )
                self.dropped |= new


def turned_schema(schema: dict[str, Any], turns: int) -> dict[str, Any]:
    """A slot's schema with ``follow_ups``: exactly ``turns - 1`` later turns (``generate --turns``)."""
    turned = copy.deepcopy(schema)
    follow_up = FollowUp.model_json_schema()
    follow_up["additionalProperties"] = False
    turned["properties"]["follow_ups"] = {
        "type": "array",
        "items": follow_up,
        "minItems": turns - 1,
        "maxItems": turns - 1,
    }
    turned["required"] = [*turned.get("required", []), "follow_ups"]
    return turned


def turned_check(check: Callable[[Blueprint], None], turns: int) -> Callable[[Blueprint], None]:
    """The slot's check, with the follow-up turns' own rules first (:func:`follow_up_findings`)."""

    def checked(bp: Blueprint) -> None:
        if isinstance(bp, TurnedBlueprint):
            fields, follow_ups = bp.split()
            problems = follow_up_findings(fields, follow_ups, turns)
            if problems:
                raise ValueError("\n".join(problems))
        check(bp)

    return checked


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


def _ask_slot(chat: ChatModel, store: BlueprintStore, request: BatchRequest, state: _BatchState, slot: Slot) -> bool:
    """Ask one slot (re-asked on broken rules) and record the outcome in ``state``.

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
        turns=request.turns,
    )
    copied: set[str] = set()
    check = slot_checker(
        request.cell, slot, state.accepted, request.examples, request.threshold, request.rules, copied, state.lock
    )
    model: type[Blueprint] = Blueprint
    schema = slot_schema(request.cell, slot.incident.ref)
    if request.turns > 1:
        model, schema, check = TurnedBlueprint, turned_schema(schema, request.turns), turned_check(check, request.turns)
    try:
        result = request_object(
            chat,
            messages,
            model,
            schema=schema,
            schema_name="blueprint",
            retries=request.retries,
            context={"taxonomy": store.taxonomy},
            check=check,
        )
    except ModelRefusal as exc:
        # A refusal is not re-asked; the slot fails with the model's words, the batch goes on.
        state.report.refusal = exc.refusal
        state.fail(ItemFailure(slot.number, [refusal_message(exc.refusal)], exc.raws[-1]))
        state.add_calls(exc.raws, exc.attempts, exc.usage)
        return True
    except StructuredOutputError as exc:
        state.fail(ItemFailure(slot.number, exc.errors, exc.raw))
        state.add_calls(exc.raws, exc.attempts, exc.usage)
        return True
    finally:
        state.drop_copied(slot, copied)
    state.fill(slot, result)
    return True


def _ask_slots(
    chat: ChatModel,
    store: BlueprintStore,
    request: BatchRequest,
    state: _BatchState,
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


def _to_records(
    chat: ChatModel, store: BlueprintStore, request: BatchRequest, state: _BatchState
) -> list[BlueprintRecord]:
    """The filled slots as records in slot order, flagged when close to a stored blueprint of the cell."""
    report = state.report
    pool = [(r.id, r.blueprint) for r in state.existing]
    records = []
    for filled in sorted(state.filled, key=lambda f: f.slot.number):
        bp, slot = filled.blueprint, filled.slot
        follow_ups: list[FollowUp] = []
        if isinstance(bp, TurnedBlueprint):
            bp, follow_ups = bp.split()
        record = BlueprintRecord(
            id=store.new_id(bp.taxonomy_id),
            status=Status.PROPOSED,
            blueprint=bp,
            follow_ups=follow_ups,
            provenance=Provenance(
                batch=report.batch_id,
                model=chat.name,
                prompt_version=request.prompt.version,
                sources=request.sources.label,
                sources_digest=request.sources.digest,
                created_at=utcnow(),
                slot=slot.number,
                setting=slot.setting,
                attempt=filled.attempts,
            ),
        )
        match = closest(bp, pool, request.threshold)
        if match is not None:
            record.flags = [
                Flag(
                    kind="near_duplicate",
                    of=match.blueprint_id,
                    similarity=round(match.similarity, 1),
                    detail=match.reason,
                )
            ]
            report.flagged.append(record.id)
        pool.append((record.id, bp))
        records.append(record)
        report.stored.append(record.id)
        if filled.attempts <= 1:
            report.first_time += 1
        else:
            report.after_reask += 1
    report.failures.sort(key=lambda f: f.slot)
    return records


def propose_batch(
    chat: ChatModel,
    store: BlueprintStore,
    request: BatchRequest,
    *,
    on_slot: Callable[[int, int], None] | None = None,
) -> tuple[list[BlueprintRecord], BatchReport]:
    """Ask the model for one batch of blueprints, one call per slot, and turn them into records.

    Each slot has its own incident and project setting (:mod:`twinforge.generator.slots`) and is
    asked on its own, ``request.concurrency`` slots at once (the embedded server decodes them
    together); its schema fixes ``source_reference`` to the slot's incident. A reply is re-asked
    (errors fed back, at most ``request.retries`` times) when it breaks a rule of
    :mod:`twinforge.generator.slotchecks`, among them repeating a blueprint the batch accepted
    before it. A slot still invalid becomes an :class:`ItemFailure`; the others are kept. A
    blueprint close to a stored one of the same cell is kept with a ``near_duplicate`` flag.

    Args:
        chat: Generator model.
        store: The workspace's blueprints (for ids and near-duplicate checks).
        request: The cell, slots and rules.
        on_slot: Called with ``(slot_number, slots)`` as each slot is asked (progress; from the
            worker threads when slots are asked at once).

    Returns:
        The new records (not yet saved), in slot order, and the batch report.

    Raises:
        ModelCallError: Transport failure before any slot was filled (after that, the slots not yet
            asked are reported as failed and the filled ones kept).
    """
    state = _BatchState(request, store)
    started = time.monotonic()
    _ask_slots(chat, store, request, state, on_slot)
    state.report.wall_seconds = time.monotonic() - started
    with state.lock:
        return _to_records(chat, store, request, state), state.report


def failures_json(report: BatchReport) -> str:
    """The raw output of failed slots, as saved under ``.twinforge/failures/`` (no data is lost)."""
    return json.dumps(
        {
            "batch": report.batch_id,
            "cell": report.cell,
            "failures": [{"slot": f.slot, "errors": f.errors, "raw": f.raw} for f in report.failures],
            "replies": report.replies,
            "refusal": report.refusal,
            "notes": report.notes,
        },
        indent=2,
    )
