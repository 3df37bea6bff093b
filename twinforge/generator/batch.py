"""One Stage I batch: ten slots, each grounded in its own incident, asked one call each or in one call.

The request is :mod:`twinforge.generator.request`, what the slots produced and the records the batch
stores are :mod:`twinforge.generator.outcome`; this module asks each slot on its own, several at
once. In ``batch`` mode one call proposes every slot first (:mod:`twinforge.generator.onecall`) and
only the slots it left without a blueprint are asked here, alone (docs/stage1.md, "One call per batch").
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from twinforge.blueprints import (
    Blueprint,
    BlueprintRecord,
    BlueprintStore,
    RefusedRecord,
    TurnedBlueprint,
    actions_of_risk,
)
from twinforge.core.exceptions import ModelCallError, ModelRefusal, StructuredOutputError
from twinforge.core.llm import ChatModel, ItemFailure, feedback_messages, refusal_message, request_object
from twinforge.generator.journal import JournaledChat
from twinforge.generator.onecall import Alone, ask_in_one_call, settle_unasked
from twinforge.generator.outcome import (
    BatchReport,
    BatchState,
    Filled,
    Refused,
    to_records,
)
from twinforge.generator.request import BatchRequest, shown_examples, slot_schema
from twinforge.generator.slotchecks import SlotJudge
from twinforge.generator.slots import Slot

BATCH_SIZE = 10  # docs/stage1.md: "An LLM proposes them in batches of 10"


def _ask_slot(
    chat: ChatModel,
    store: BlueprintStore,
    request: BatchRequest,
    state: BatchState,
    slot: Slot,
    alone: Alone | None = None,
) -> bool:
    """Ask one slot (re-asked on defects, and on doubts while re-asks remain) and record the outcome.

    The outcome is one of: a blueprint to store (the first reply without a doubt, or the last one
    without a defect, with its doubts), the last reply to store refused (every reply had a defect),
    or a failure (the model refused; nothing to store). With ``alone``, the slot was asked in the
    batch's one call first: that call counts as its first attempt, its blueprint and problems are
    fed back, and it has ``retries`` calls left.

    Returns:
        False when the slot was not asked because the batch stopped meanwhile.

    Raises:
        ModelCallError: Transport failure of the slot's first call.
    """
    if state.stop.is_set():
        return False
    source, risk = store.taxonomy.split(request.cell)
    with state.lock:
        examples = shown_examples(request.examples, state.dropped)
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
        turns=request.turns,
    )
    before = 0
    if alone is not None:
        before = 1  # the batch's one call
        if alone.reply:
            ask = ["Reply again with only this one blueprint, corrected, as a JSON document."]
            messages = feedback_messages(messages, alone.reply, alone.problems, ask)
    asked: ChatModel = chat if request.journal is None else JournaledChat(chat, request.journal, slot)
    model: type[Blueprint] = TurnedBlueprint if request.turns > 1 else Blueprint
    schema = slot_schema(request.cell, slot.incident.ref, request.turns)
    try:
        result = request_object(
            asked,
            messages,
            model,
            schema=schema,
            schema_name="blueprint",
            retries=request.retries - before,
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
            state.fill(Filled(slot, kept[0], before + exc.attempts, kept[1], exc.raw), [])
        else:
            checked = judge.judge_reply(exc.raw, exc.errors)
            state.refuse(Refused(slot, checked, before + exc.attempts, exc.raw))
        return True
    finally:
        state.drop_copied(slot, judge.copied)
    found = judge.candidate[1] if judge.candidate and judge.candidate[0] is result.value else []
    attempts = before + len(result.completions)
    state.fill(Filled(slot, result.value, attempts, found, result.completions[-1].raw), result.completions)
    return True


def _ask_slots(
    chat: ChatModel,
    store: BlueprintStore,
    request: BatchRequest,
    state: BatchState,
    on_slot: Callable[[int, int], None] | None,
    alone: list[Alone] | None = None,
) -> None:
    """Ask every slot (or the ``alone`` ones), ``request.concurrency`` at once; stop at a transport error or interrupt.

    The askers are daemon threads: after an interrupt (Ctrl-C) the filled slots are kept and the
    command exits without waiting for the calls still in flight, whose replies are dropped.

    Raises:
        ModelCallError: Transport failure before any slot was filled.
    """
    again = {item.slot.number: item for item in alone or []}
    slots = [item.slot for item in alone] if alone is not None else request.plan.slots
    count = len(request.plan.slots)
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
                    on_slot(slot.number, count)
                results.put((slot, _ask_slot(chat, store, request, state, slot, again.get(slot.number)), None))
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
        state.report.notes.append(f"interrupted after {done} of {count} slot(s); the filled ones are kept")
        return
    if error is not None:
        if not state.filled:
            raise error
        unasked = [s for s in slots if s.number not in asked]
        state.report.notes.append(
            f"model call failed at slot {failed_at}: {error}; {len(unasked)} slot(s) were not asked"
        )
        state.report.failures += [ItemFailure(s.number, [f"not asked: {error}"], "") for s in unasked]


def propose_batch(
    chat: ChatModel,
    store: BlueprintStore,
    request: BatchRequest,
    *,
    on_slot: Callable[[int, int], None] | None = None,
) -> tuple[list[BlueprintRecord], list[RefusedRecord], BatchReport]:
    """Ask the model for one batch of blueprints and turn every reply into a record.

    Each slot has its own incident and project setting (:mod:`twinforge.generator.slots`). In
    ``slots`` mode each slot is asked on its own, ``request.concurrency`` slots at once (the embedded
    server decodes them together); its schema fixes ``source_reference`` to the slot's incident. A
    reply is re-asked (problems fed back, at most ``request.retries`` times) when it has a defect, or
    a doubt while doubts are re-asked (:mod:`twinforge.generator.slotchecks`). In ``batch`` mode one
    call proposes every slot (:mod:`twinforge.generator.onecall`); a blueprint with a defect, an
    invalid or a missing one is then asked alone the same way, that call counting as its first
    attempt, and no doubt is re-asked. Nothing a slot proposed is lost: its blueprint is stored with
    its doubts, or its last reply is stored refused with its findings; only a model refusal or a slot
    never asked is an :class:`ItemFailure`. A blueprint repeating a stored one of the cell is refused;
    one that may repeat a stored scenario is flagged.

    Args:
        chat: Generator model.
        store: The workspace's blueprints (for ids and near-duplicate checks).
        request: The cell, slots and rules.
        on_slot: Called with ``(slot_number, slots)`` as each slot is asked on its own (progress;
            from the worker threads when slots are asked at once).

    Returns:
        The new records and the refused proposals (neither saved yet), in slot order, and the report.

    Raises:
        ModelCallError: Transport failure before any slot was filled (after that, the slots not yet
            asked are reported as failed and the filled ones kept).
    """
    state = BatchState(request, store)
    state.report.mode = request.mode
    started = time.monotonic()
    if request.mode == "batch":
        alone = ask_in_one_call(chat, store, request, state)
        if alone and request.retries < 1:
            settle_unasked(store, request, state, alone)
        elif alone:
            numbers = ", ".join(str(item.slot.number) for item in alone)
            state.report.notes.append(f"{len(alone)} slot(s) asked again alone: {numbers}")
            _ask_slots(chat, store, request, state, on_slot, alone)
    else:
        _ask_slots(chat, store, request, state, on_slot)
    state.report.wall_seconds = time.monotonic() - started
    with state.lock:
        records, refused = to_records(chat.name, request.prompt.version, store, request, state)
    return records, refused, state.report


def journal_header(request: BatchRequest, model: str) -> dict[str, Any]:
    """The first line of a batch's replies journal: what recovery needs to store its replies."""
    return {
        "cell": request.cell,
        "model": model,
        "prompt": request.prompt.version,
        "sources": request.sources.label,
        "sources_digest": request.sources.digest,
        "threshold": request.threshold,
        "turns": request.turns,
    }
