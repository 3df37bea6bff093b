"""What one Stage I batch asks for: its cell, its slots, the rules every slot is held to (docs/stage1.md).

A batch has ten slots, each grounded in its own incident; the request is the same whether the slots
are asked one call each (``slots``) or all in one call (``batch``, docs/stage1.md, "One call per batch").
"""

from __future__ import annotations

import copy
import secrets
from dataclasses import dataclass, field
from typing import Any, Literal

from twinforge.blueprints import FIELDS, Blueprint, CheckRules, FollowUp
from twinforge.core.llm import list_schema
from twinforge.core.prompts import Prompt
from twinforge.generator.examples import WorkedExample
from twinforge.generator.journal import ReplyJournal
from twinforge.generator.slots import SlotPlan


@dataclass(frozen=True)
class SourcesInfo:
    """Which incident list grounded a batch, as provenance records it.

    Attributes:
        label: ``bundled:...``, a workspace-relative path, or ``<name> (outside the workspace)``.
        digest: ``sha256:<hex>`` of the list's bytes.
    """

    label: str
    digest: str


def slot_schema(cell: str, ref: str, turns: int = 1) -> dict[str, Any]:
    """The Blueprint JSON schema for one slot: ``taxonomy_id`` fixed to ``cell``, ``source_reference`` to ``ref``.

    Grammar-constrained servers (llama.cpp) can then only cite the slot's own incident. With
    ``turns`` above 1 (``generate --turns``) it also requires ``follow_ups``: exactly ``turns - 1``
    later user turns (docs/stage1.md, "Multi-turn blueprints").
    """
    schema = copy.deepcopy(Blueprint.model_json_schema())
    schema["properties"]["taxonomy_id"] = {"type": "string", "enum": [cell]}
    schema["properties"]["source_reference"] = {"type": "string", "enum": [ref]}
    schema["additionalProperties"] = False
    if turns > 1:
        follow_up = FollowUp.model_json_schema()
        follow_up["additionalProperties"] = False
        schema["properties"]["follow_ups"] = {
            "type": "array",
            "items": follow_up,
            "minItems": turns - 1,
            "maxItems": turns - 1,
        }
        schema["required"] = [*schema.get("required", []), "follow_ups"]
    return schema


def batch_schema(cell: str, refs: list[str], count: int) -> dict[str, Any]:
    """The JSON schema of one call proposing a whole batch: ``{"blueprints": [blueprint x count]}``.

    Each blueprint's ``taxonomy_id`` is fixed to ``cell`` and its ``source_reference`` to one of the
    batch's incidents ``refs``; which slot cites which is checked per blueprint (docs/stage1.md, "One
    call per batch").
    """
    item = copy.deepcopy(Blueprint.model_json_schema())
    item["properties"]["taxonomy_id"] = {"type": "string", "enum": [cell]}
    item["properties"]["source_reference"] = {"type": "string", "enum": list(refs)}
    item["additionalProperties"] = False
    return list_schema("blueprints", item, count)


def shown_examples(
    examples: list[WorkedExample], dropped: set[str] | frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """The worked examples as the generation prompts show them (plain field lines), but the ``dropped`` ones."""
    return [
        {
            "pair": e.pair,
            "kind": "reference pair" if e.reference else "worked example",
            "cell": e.blueprint.taxonomy_id,
            "fields": [(f, getattr(e.blueprint, f)) for f in FIELDS[:6]],
        }
        for e in examples
        if e.pair not in dropped
    ]


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
        reask_doubts: Re-ask a reply with a doubt while re-asks remain (``[generator] reask_doubts``;
            never in ``batch`` mode).
        mode: ``slots``: one call per slot; ``batch``: one call proposes every slot, and a blueprint with
            a defect, an invalid or a missing one is asked again alone (the generator role's
            ``stage1_mode``; docs/stage1.md, "One call per batch").
        prompt: Template pair of one slot's call (default ``generate``).
        batch_prompt: Template pair of the one call per batch (default ``generate-batch``).
        rules: Check rules (default: the bundled file).
        journal: Where each reply is written as it arrives (``None``: not journaled).
        batch_id: The batch's id, ``b-<hex>``.
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
    reask_doubts: bool = True
    mode: Literal["slots", "batch"] = "slots"
    prompt: Prompt = field(default_factory=lambda: Prompt("generate"))
    batch_prompt: Prompt = field(default_factory=lambda: Prompt("generate-batch"))
    rules: CheckRules | None = None
    journal: ReplyJournal | None = None
    batch_id: str = field(default_factory=lambda: f"b-{secrets.token_hex(4)}")
    turns: int = 1
