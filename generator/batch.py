"""One Stage I batch: ten slots, each grounded in its own incident; validate, check, flag near-duplicates."""

from __future__ import annotations

import copy
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from blueprints import (
    Blueprint,
    BlueprintRecord,
    BlueprintStore,
    CheckRules,
    Flag,
    Provenance,
    Status,
    check_blueprint,
    closest,
    utcnow,
)
from generator.examples import WorkedExample
from generator.slots import Slot, SlotPlan
from twinforge.llm import ChatModel, Completion, ItemFailure, Message, request_items
from twinforge.prompts import Prompt

BATCH_SIZE = 10  # docs/stage1.md: "An LLM proposes them in batches of 10"
EXISTING_SHOWN = 12  # stored tasks of the cell listed in the prompt, to steer away from repeats


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
        prompt_tokens: Summed over calls.
        completion_tokens: Summed over calls.
        seconds: Model time summed over calls.
        calls: Model calls made (1 + re-asks).
        notes: Other remarks (slots sharing an incident, extra items dropped, ...).
        commit: The commit that stored the batch, if any.
        failures_file: Where the raw failed output was saved, if anything failed.
        replies: Every raw model reply of the batch (saved with failures).
        refusal: The model's refusal text when it declined (then nothing was re-asked).
    """

    batch_id: str
    cell: str
    replies: list[str] = field(default_factory=list)
    stored: list[str] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)
    failures: list[ItemFailure] = field(default_factory=list)
    first_time: int = 0
    after_reask: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    calls: int = 0
    notes: list[str] = field(default_factory=list)
    commit: str | None = None
    failures_file: str | None = None
    refusal: str | None = None


class _CountingChat:
    """Counts the calls of a chat model so each accepted blueprint knows on which call it came."""

    def __init__(self, chat: ChatModel) -> None:
        self.chat = chat
        self.calls = 0

    @property
    def name(self) -> str:
        return self.chat.name

    def complete(
        self, messages: list[Message], *, schema: dict[str, Any] | None = None, schema_name: str = "output"
    ) -> Completion:
        self.calls += 1
        return self.chat.complete(messages, schema=schema, schema_name=schema_name)


def item_schema(cell: str, refs: list[str]) -> dict[str, Any]:
    """The Blueprint JSON schema for one cell and a set of incident refs.

    ``taxonomy_id`` is fixed to ``cell`` and ``source_reference`` limited to ``refs``, so
    grammar-constrained servers (llama.cpp) can only cite the batch's incidents.
    """
    schema = copy.deepcopy(Blueprint.model_json_schema())
    schema["properties"]["taxonomy_id"] = {"type": "string", "enum": [cell]}
    schema["properties"]["source_reference"] = {"type": "string", "enum": refs}
    schema["additionalProperties"] = False
    return schema


def _describe(slots: list[Slot]) -> str:
    return "; ".join(f"slot {s.number} (project: {s.setting}; incident {s.incident.ref})" for s in slots)


def propose_batch(
    chat: ChatModel,
    store: BlueprintStore,
    *,
    cell: str,
    plan: SlotPlan,
    examples: list[WorkedExample],
    sources: SourcesInfo,
    threshold: float,
    retries: int = 2,
    prompt: Prompt | None = None,
    rules: CheckRules | None = None,
) -> tuple[list[BlueprintRecord], BatchReport]:
    """Ask the model for one batch of blueprints for ``cell``, one per slot, and turn them into records.

    Each slot has its own incident and project setting (:mod:`generator.slots`); a blueprint
    fills the open slot whose incident it cites, so ``source_reference`` is always its slot's
    incident. A blueprint is re-asked (with the errors fed back, at most ``retries`` times) when
    it does not validate, cites no open slot, breaks a check of ``guidelines/blueprint-checks.yaml``,
    or repeats another blueprint of the reply (wording or scenario). Slots still unfilled become
    :class:`ItemFailure` entries; the valid blueprints are kept. A blueprint close to a stored one
    of the same cell is kept with a ``near_duplicate`` flag.

    Args:
        chat: Generator model.
        store: The workspace's blueprints (for ids and near-duplicate checks).
        cell: Target cell, e.g. ``S2-R3``.
        plan: The batch's slots.
        examples: Worked examples shown in the prompt.
        sources: The incident list, as provenance records it.
        threshold: Near-duplicate wording threshold 0-100.
        retries: Re-asks.
        prompt: Template pair (default ``generate``).
        rules: Check rules (default: the bundled file).

    Returns:
        The new records (not yet saved), in slot order, and the batch report.

    Raises:
        ModelCallError: Transport failure after retries.
    """
    prompt = prompt or Prompt("generate")
    source, risk = store.taxonomy.split(cell)
    existing = [r for r in store.records() if r.blueprint.taxonomy_id == cell]
    messages = prompt.render(
        count=len(plan.slots),
        cell=cell,
        source=source,
        risk=risk,
        slots=plan.slots,
        examples=[
            {
                "cell": e.blueprint.taxonomy_id,
                "pair": e.pair,
                "json": json.dumps(e.blueprint.model_dump(mode="json"), indent=1),
            }
            for e in examples
        ],
        existing=[r.blueprint.engineering_task for r in existing[-EXISTING_SHOWN:]],
    )
    counting = _CountingChat(chat)
    filled: dict[int, tuple[Blueprint, int]] = {}
    accepted: list[tuple[str, Blueprint]] = []

    def open_slots() -> list[Slot]:
        return [s for s in plan.slots if s.number not in filled]

    def check(bp: Blueprint) -> None:
        if bp.taxonomy_id != cell:
            raise ValueError(f"taxonomy_id must be {cell!r}, got {bp.taxonomy_id!r}")
        slot = next((s for s in open_slots() if s.incident.ref == bp.source_reference), None)
        if slot is None:
            taken = bp.source_reference in plan.refs
            why = "belongs to a slot that is already filled" if taken else "is not the incident of any slot"
            raise ValueError(
                f"source_reference {bp.source_reference!r} {why}; write the blueprint of an open slot and cite "
                f"its incident: {_describe(open_slots())}"
            )
        findings = check_blueprint(bp, rules=rules)
        if findings:
            raise ValueError("; ".join(str(f) for f in findings))
        twin = closest(bp, accepted, threshold)
        if twin is not None:
            # A copy inside one reply is re-asked, not stored: small models repeat themselves.
            raise ValueError(
                f"repeats blueprint {twin.blueprint_id} of this reply ({twin.reason}); write a different "
                f"scenario set in slot {slot.number}'s project: {slot.setting}"
            )
        filled[slot.number] = (bp, counting.calls)
        accepted.append((f"#{slot.number}", bp))

    result = request_items(
        counting,
        messages,
        Blueprint,
        count=len(plan.slots),
        list_key="blueprints",
        item_schema=item_schema(cell, plan.refs),
        schema_name="blueprint_batch",
        retries=retries,
        context={"taxonomy": store.taxonomy},
        check=check,
        reask_note=lambda: f"Still open: {_describe(open_slots())}.",
    )
    report = BatchReport(
        replies=result.replies,
        batch_id=f"b-{secrets.token_hex(4)}",
        cell=cell,
        failures=[ItemFailure(s.number, f.errors, f.raw) for f, s in zip(result.failures, open_slots(), strict=False)],
        prompt_tokens=sum(c.prompt_tokens for c in result.completions),
        completion_tokens=sum(c.completion_tokens for c in result.completions),
        seconds=sum(c.seconds for c in result.completions),
        calls=result.attempts,
        notes=[*plan.notes, *result.notes],
        refusal=result.refusal,
    )
    now = utcnow()
    pool = [(r.id, r.blueprint) for r in existing]
    records = []
    by_slot = {s.number: s for s in plan.slots}
    for number in sorted(filled):
        bp, attempt = filled[number]
        slot = by_slot[number]
        record = BlueprintRecord(
            id=store.new_id(cell),
            status=Status.PROPOSED,
            blueprint=bp,
            provenance=Provenance(
                batch=report.batch_id,
                model=chat.name,
                prompt_version=prompt.version,
                sources=sources.label,
                sources_digest=sources.digest,
                created_at=now,
                slot=slot.number,
                setting=slot.setting,
                attempt=attempt,
            ),
        )
        match = closest(bp, pool, threshold)
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
        if attempt <= 1:
            report.first_time += 1
        else:
            report.after_reask += 1
    return records, report


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
