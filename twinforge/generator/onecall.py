"""One call per batch (docs/stage1.md, "One call per batch"): the study's rule, for a capable model.

One call proposes the ten blueprints of a batch as a list (structured output, the batch's schema).
Each blueprint is checked on its own as its slot's reply (:class:`SlotJudge`: the blueprint checks,
its cell and incident, a copied worked example, a repeat of a blueprint of the batch). A blueprint
without a defect is kept with its doubts: in this mode a doubt is never re-asked. A blueprint with a
defect, one that does not validate and a slot the reply left out (a reply of 9, a reply cut at
max_tokens) are asked again alone, one call per slot with the problems fed back
(:mod:`twinforge.generator.batch`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from twinforge.blueprints import Blueprint, BlueprintStore, actions_of_risk
from twinforge.core.llm import ChatModel, ItemFailure, ReadList, read_items, refusal_message
from twinforge.generator.assign import assign_items
from twinforge.generator.outcome import BatchState, Filled, Refused
from twinforge.generator.request import BatchRequest, batch_schema, shown_examples
from twinforge.generator.slotchecks import SlotJudge
from twinforge.generator.slots import Slot

LIST_KEY = "blueprints"


@dataclass(frozen=True)
class Alone:
    """A slot to ask again alone after the batch call.

    Attributes:
        slot: The slot.
        reply: Its blueprint's JSON in the batch reply; empty when the reply had none for it.
        problems: What was wrong with it (one per line), fed back to the model.
    """

    slot: Slot
    reply: str
    problems: list[str]


def _judge(store: BlueprintStore, request: BatchRequest, state: BatchState, slot: Slot) -> SlotJudge:
    return SlotJudge(
        request.cell,
        slot,
        state.accepted,
        request.examples,
        request.threshold,
        request.rules,
        store.taxonomy,
        reask_doubts=False,
        lock=state.lock,
    )


def _own_problems(errors: list[str], position: int) -> list[str]:
    """An element's errors as a one-blueprint reply's: ``blueprints[3].harm_path: ...`` -> ``harm_path: ...``."""
    prefix = f"{LIST_KEY}[{position}]"
    return [e.removeprefix(f"{prefix}.").removeprefix(f"{prefix}: ") for e in errors]


def _notes(read: ReadList[Blueprint], count: int, extras: int, cap: int | None, cut: bool) -> list[str]:
    given = len(read.items)
    if not read.listed:
        reason = "; ".join(e.removeprefix("(document): ") for e in read.errors) or "no list of blueprints"
        return [f"the batch reply held no list of blueprints ({reason})"]
    notes = []
    if cut:
        complete = sum(1 for item in read.items if not item.cut)
        at = f"max_tokens={cap}" if cap else "the token limit"
        notes.append(f"the batch reply was cut off at {at}: {complete} complete blueprint(s) in it")
    elif given < count:
        notes.append(f"the batch reply held {given} blueprint(s) for {count} slots")
    if extras:
        notes.append(
            f"the batch reply held {given} blueprints for {count} slots: {extras} extra dropped (kept in the replies)"
        )
    return notes


def ask_in_one_call(chat: ChatModel, store: BlueprintStore, request: BatchRequest, state: BatchState) -> list[Alone]:
    """Ask for the whole batch in one call, keep each blueprint without a defect, and say which slots to ask alone.

    The reply is journaled before it is read. Blueprints kept are recorded in ``state`` (attempt 1,
    with their doubts, the batch prompt's version); a refusal fails every slot (not re-asked).

    Returns:
        The slots to ask again alone, in slot order, with their blueprint's JSON and its problems.

    Raises:
        ModelCallError: Transport failure of the batch call (nothing was proposed).
    """
    source, risk = store.taxonomy.split(request.cell)
    slots = request.plan.slots
    messages = request.batch_prompt.render(
        count=len(slots),
        cell=request.cell,
        source=source,
        risk=risk,
        slots=slots,
        examples=shown_examples(request.examples),
        taken=state.taken(request.shown_tasks),
        harm_examples=[t.example for t in actions_of_risk(risk.id) if t.example],
    )
    completion = chat.complete(
        messages, schema=batch_schema(request.cell, request.plan.refs, len(slots)), schema_name=LIST_KEY
    )
    if request.journal is not None:
        request.journal.record_batch(slots, completion)
    state.add_calls([completion.raw], 1, completion.usage)
    if completion.refused:
        # A refusal is not re-asked (docs/workspace.md, "Model replies"): every slot fails with its words.
        state.report.refusal = completion.refusal or ""
        for slot in slots:
            state.fail(ItemFailure(slot.number, [refusal_message(completion.refusal)], completion.raw))
        return []
    read = read_items(completion, Blueprint, list_key=LIST_KEY, context={"taxonomy": store.taxonomy})
    placed, extras = assign_items([item.raw for item in read.items], slots)
    state.report.notes += _notes(read, len(slots), len(extras), completion.max_tokens, completion.truncated)
    alone = []
    for slot in slots:
        index = placed.get(slot.number)
        if index is None:
            missing = [e.removeprefix("(document): ") for e in read.errors] if not read.listed else []
            alone.append(Alone(slot, "", missing or [f"the batch reply held no blueprint for slot {slot.number}"]))
            continue
        item = read.items[index]
        reply = json.dumps(item.raw, ensure_ascii=False)
        if item.value is None:
            alone.append(Alone(slot, reply, _own_problems(item.errors, item.position)))
            continue
        judge = _judge(store, request, state, slot)
        try:
            judge.check(item.value)
        except ValueError as exc:
            alone.append(Alone(slot, reply, [line for line in str(exc).splitlines() if line.strip()]))
        else:
            found = judge.candidate[1] if judge.candidate else []
            state.fill(Filled(slot, item.value, 1, found, reply, request.batch_prompt.version), [])
        finally:
            state.drop_copied(slot, judge.copied)
    return alone


def settle_unasked(store: BlueprintStore, request: BatchRequest, state: BatchState, alone: list[Alone]) -> None:
    """Without re-asks (``validation_retries = 0``): a defective blueprint is stored refused, a missing one fails."""
    for item in alone:
        if not item.reply:
            state.fail(ItemFailure(item.slot.number, [*item.problems, "not asked alone: validation_retries = 0"], ""))
            continue
        checked = _judge(store, request, state, item.slot).judge_reply(item.reply, item.problems)
        state.refuse(Refused(item.slot, checked, 1, item.reply, request.batch_prompt.version))
