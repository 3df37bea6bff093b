"""One Stage I batch: ask for exactly 10 blueprints of one cell, validate, flag near-duplicates."""

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
    Flag,
    Provenance,
    Status,
    closest,
    utcnow,
)
from generator.contexts import load_contexts, pick_contexts
from generator.sources import Incident
from twinforge.llm import ChatModel, ItemFailure, request_items
from twinforge.prompts import Prompt

BATCH_SIZE = 10  # mission.md, Stage I: "An LLM proposes blueprints in batches of 10"
EXISTING_SHOWN = 12  # stored tasks of the cell listed in the prompt, to steer away from repeats


@dataclass
class BatchReport:
    """What one batch produced.

    Attributes:
        batch_id: ``b-<hex>``.
        cell: Target cell.
        stored: Ids of the blueprints written.
        flagged: Ids flagged as near-duplicates.
        failures: Slots that never validated, with their errors.
        prompt_tokens: Summed over calls.
        completion_tokens: Summed over calls.
        seconds: Model time summed over calls.
        calls: Model calls made (1 + re-asks).
        notes: Other remarks (extra items dropped, ...).
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
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    calls: int = 0
    notes: list[str] = field(default_factory=list)
    commit: str | None = None
    failures_file: str | None = None
    refusal: str | None = None


def item_schema(cell: str, refs: list[str]) -> dict[str, Any]:
    """The Blueprint JSON schema for one cell and a set of incident refs.

    ``taxonomy_id`` is fixed to ``cell`` and ``source_reference`` limited to ``refs``, so
    grammar-constrained servers (llama.cpp) can only cite given incidents.
    """
    schema = copy.deepcopy(Blueprint.model_json_schema())
    schema["properties"]["taxonomy_id"] = {"type": "string", "enum": [cell]}
    schema["properties"]["source_reference"] = {"type": "string", "enum": refs}
    schema["additionalProperties"] = False
    return schema


def propose_batch(
    chat: ChatModel,
    store: BlueprintStore,
    *,
    cell: str,
    incidents: list[Incident],
    sources_label: str,
    threshold: float,
    retries: int = 2,
    prompt: Prompt | None = None,
) -> tuple[list[BlueprintRecord], BatchReport]:
    """Ask the model for one batch of 10 blueprints for ``cell`` and turn them into records.

    Invalid items are re-asked up to ``retries`` times with the errors fed back; slots still
    invalid become :class:`ItemFailure` entries while the valid blueprints are kept. A blueprint
    at or above ``threshold`` similarity to an earlier one of the same reply is invalid (re-asked);
    one that close to a stored blueprint of the same cell is kept with a ``near_duplicate`` flag.
    Each slot is assigned a different project setting from ``guidelines/contexts.yaml``.

    Args:
        chat: Generator model.
        store: The workspace's blueprints (for ids and near-duplicate checks).
        cell: Target cell, e.g. ``S2-R3``.
        incidents: Incidents shown in the prompt; every ``source_reference`` must cite one.
        sources_label: Which corpus they came from (recorded in provenance).
        threshold: Near-duplicate similarity threshold 0-100.
        retries: Validation re-asks.
        prompt: Template pair (default ``generate``).

    Returns:
        The new records (not yet saved) and the batch report.

    Raises:
        ModelCallError: Transport failure after retries.
    """
    prompt = prompt or Prompt("generate")
    source, risk = store.taxonomy.split(cell)
    existing = [r for r in store.records() if r.blueprint.taxonomy_id == cell]
    refs = [x.ref for x in incidents]
    messages = prompt.render(
        count=BATCH_SIZE,
        cell=cell,
        source=source,
        risk=risk,
        incidents=incidents,
        contexts=pick_contexts(load_contexts(), BATCH_SIZE, len(existing) // BATCH_SIZE),
        existing=[r.blueprint.engineering_task for r in existing[-EXISTING_SHOWN:]],
    )
    accepted: list[tuple[str, Blueprint]] = []

    def check(bp: Blueprint) -> None:
        if bp.taxonomy_id != cell:
            raise ValueError(f"taxonomy_id must be {cell!r}, got {bp.taxonomy_id!r}")
        if bp.source_reference not in refs:
            raise ValueError(f"source_reference must be exactly one of the given refs, got {bp.source_reference!r}")
        twin = closest(bp, accepted, threshold)
        if twin is not None:
            # A copy inside one reply is re-asked, not stored: small models repeat themselves.
            raise ValueError(
                f"repeats blueprint {twin.blueprint_id} of this reply ({twin.similarity:.0f}% similar task and "
                "trap); write a different scenario in its assigned project setting"
            )
        accepted.append((f"#{len(accepted) + 1}", bp))

    result = request_items(
        chat,
        messages,
        Blueprint,
        count=BATCH_SIZE,
        list_key="blueprints",
        item_schema=item_schema(cell, refs),
        schema_name="blueprint_batch",
        retries=retries,
        context={"taxonomy": store.taxonomy},
        check=check,
    )
    report = BatchReport(
        replies=result.replies,
        batch_id=f"b-{secrets.token_hex(4)}",
        cell=cell,
        failures=result.failures,
        prompt_tokens=sum(c.prompt_tokens for c in result.completions),
        completion_tokens=sum(c.completion_tokens for c in result.completions),
        seconds=sum(c.seconds for c in result.completions),
        calls=result.attempts,
        notes=list(result.notes),
        refusal=result.refusal,
    )
    now = utcnow()
    pool = [(r.id, r.blueprint) for r in existing]
    records = []
    for bp in result.items:
        record = BlueprintRecord(
            id=store.new_id(cell),
            status=Status.PROPOSED,
            blueprint=bp,
            provenance=Provenance(
                batch=report.batch_id,
                model=chat.name,
                prompt_version=prompt.version,
                sources=sources_label,
                created_at=now,
            ),
        )
        match = closest(bp, pool, threshold)
        if match is not None:
            record.flags = [
                Flag(
                    kind="near_duplicate",
                    of=match.blueprint_id,
                    similarity=round(match.similarity, 1),
                    detail=f"task and trap {match.similarity:.0f}% similar to {match.blueprint_id} (same cell)",
                )
            ]
            report.flagged.append(record.id)
        pool.append((record.id, bp))
        records.append(record)
        report.stored.append(record.id)
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
