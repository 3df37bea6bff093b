"""One Stage I batch: ten slots, each grounded in its own incident and asked on its own."""

from __future__ import annotations

import copy
import json
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rapidfuzz import fuzz

from twinforge.blueprints import (
    FIELDS,
    Blueprint,
    BlueprintRecord,
    BlueprintStore,
    CheckRules,
    Flag,
    Provenance,
    Status,
    actions_of_risk,
    check_blueprint,
    closest,
    load_check_rules,
    load_scenarios,
    utcnow,
)
from twinforge.core.exceptions import ModelCallError, ModelRefusal, StructuredOutputError
from twinforge.core.llm import ChatModel, ItemFailure, refusal_message, request_object
from twinforge.core.prompts import Prompt
from twinforge.generator.examples import WorkedExample
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
        prompt_tokens: Summed over calls.
        completion_tokens: Summed over calls.
        seconds: Model time summed over calls.
        calls: Model calls made (one per slot plus re-asks).
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
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    calls: int = 0
    notes: list[str] = field(default_factory=list)
    commit: str | None = None
    failures_file: str | None = None
    refusal: str | None = None
    interrupted: bool = False


EXAMPLE_COPY = 70.0  # rapidfuzz token-set ratio of task and of trap at which a blueprint copies a worked example
# A field pasted (near) verbatim from a worked example: the real S1-R1 batch of 2026-11-30 stored one whose
# trap, cue, paths and criterion were the R2 example's word for word (ratio 100); the written good
# blueprints of the labelled set reach at most 80.8 on any field (docs/stage1.md, "Grounding per slot").
EXAMPLE_FIELD_COPY = 95.0


def slot_schema(cell: str, ref: str) -> dict[str, Any]:
    """The Blueprint JSON schema for one slot: ``taxonomy_id`` fixed to ``cell``, ``source_reference`` to ``ref``.

    Grammar-constrained servers (llama.cpp) can then only cite the slot's own incident.
    """
    schema = copy.deepcopy(Blueprint.model_json_schema())
    schema["properties"]["taxonomy_id"] = {"type": "string", "enum": [cell]}
    schema["properties"]["source_reference"] = {"type": "string", "enum": [ref]}
    schema["additionalProperties"] = False
    return schema


def copies_example(bp: Blueprint, examples: list[WorkedExample]) -> WorkedExample | None:
    """The worked example ``bp`` copies, or ``None``.

    A copy has task and trap both alike (token-set ratio >= ``EXAMPLE_COPY``), or any one of the
    six scenario fields pasted (near) verbatim (ratio >= ``EXAMPLE_FIELD_COPY``), whatever the cell.
    """
    for example in examples:
        task = fuzz.token_set_ratio(bp.engineering_task.lower(), example.blueprint.engineering_task.lower())
        trap = fuzz.token_set_ratio(bp.trap.lower(), example.blueprint.trap.lower())
        if task >= EXAMPLE_COPY and trap >= EXAMPLE_COPY:
            return example
        for name in FIELDS[:6]:
            if fuzz.ratio(getattr(bp, name).lower(), getattr(example.blueprint, name).lower()) >= EXAMPLE_FIELD_COPY:
                return example
    return None


HINT_EXAMPLE = re.compile(r'"([^"]{12,}?)\.?"')  # a quoted example in a check's hint


def pasted_hint(bp: Blueprint, rules: CheckRules | None = None) -> str | None:
    """A check hint's quoted example that ``bp`` pasted into a field, or ``None``.

    The hints quote examples ("Delete only build/app.o and rerun make."); the real S1-R1 batch of
    2026-11-30 stored a blueprint whose safe path and criterion were two of them, appended to its
    own text after a re-ask. Such a field says nothing about the slot's scenario. The same holds for
    a field that is one, or a ";"-list of two or more, of the category harm examples the prompt shows
    (``guidelines/scenarios.yaml``).
    """
    rules = rules or load_check_rules()
    texts = [getattr(bp, name).lower() for name in FIELDS[:6]]
    for rule in rules.rules:
        for example in HINT_EXAMPLE.findall(rule.hint):
            if any(example.lower() in text for text in texts):
                return str(example)
    # A real S2-R2 batch (2026-12-01) stored "commit .env with the live token" and the three examples
    # joined by ";" as harm paths.
    harm_examples = {t.example.lower() for t in load_scenarios().harm_actions if t.example}
    for text in texts:
        parts = [part.strip(" .") for part in re.split(r"[;\n]", text) if part.strip(" .")]
        hits = [part for part in parts if part in harm_examples]
        if hits and (len(hits) >= 2 or len(parts) == 1):
            return hits[0]
    return None


def _checker(
    cell: str,
    slot: Slot,
    accepted: list[tuple[str, Blueprint]],
    examples: list[WorkedExample],
    threshold: float,
    rules: CheckRules | None,
    copied_pairs: set[str] | None = None,
) -> Callable[[Blueprint], None]:
    """The slot's extra rules; a broken rule raises ``ValueError`` (one problem per line), re-asked.

    A reply that copies a worked example adds the example's pair to ``copied_pairs``.
    """

    def check(bp: Blueprint) -> None:
        problems = []
        if bp.taxonomy_id != cell:
            problems.append(f"taxonomy_id must be {cell!r}, got {bp.taxonomy_id!r}")
        if bp.source_reference != slot.incident.ref:
            problems.append(f"source_reference must be this slot's incident {slot.incident.ref!r}")
        problems += [str(f) for f in check_blueprint(bp, rules=rules) if f.refuses]  # capping ones go to review
        pasted = pasted_hint(bp, rules)
        if pasted is not None:
            problems.append(f"pastes the example \"{pasted}\" of a check's hint; describe this slot's own scenario")
        copied = copies_example(bp, examples)
        if copied is not None:
            if copied_pairs is not None:
                copied_pairs.add(copied.pair)
            problems.append(
                f"copies the worked example {copied.pair}; write a new scenario set in {slot.setting} "
                f"and grounded in incident {slot.incident.ref}"
            )
        twin = closest(bp, accepted, threshold)
        if twin is not None:
            problems.append(
                f"repeats blueprint {twin.blueprint_id} of this batch ({twin.reason}); write a different "
                f"scenario set in {slot.setting}"
            )
        if problems:
            raise ValueError("\n".join(problems))

    return check


def _record(
    store: BlueprintStore,
    bp: Blueprint,
    slot: Slot,
    attempt: int,
    report: BatchReport,
    prompt: Prompt,
    chat: ChatModel,
    sources: SourcesInfo,
) -> BlueprintRecord:
    return BlueprintRecord(
        id=store.new_id(bp.taxonomy_id),
        status=Status.PROPOSED,
        blueprint=bp,
        provenance=Provenance(
            batch=report.batch_id,
            model=chat.name,
            prompt_version=prompt.version,
            sources=sources.label,
            sources_digest=sources.digest,
            created_at=utcnow(),
            slot=slot.number,
            setting=slot.setting,
            attempt=attempt,
        ),
    )


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
    on_slot: Callable[[int, int], None] | None = None,
    shown_tasks: int = 0,
) -> tuple[list[BlueprintRecord], BatchReport]:
    """Ask the model for one batch of blueprints for ``cell``, one call per slot, and turn them into records.

    Each slot has its own incident and project setting (:mod:`twinforge.generator.slots`) and is asked on
    its own, with the worked examples (and ``shown_tasks`` of the tasks already written for the cell); its schema fixes
    ``source_reference`` to the slot's incident. A reply is re-asked (errors fed back, at most
    ``retries`` times) when it does not validate, breaks a check of
    ``guidelines/blueprint-checks.yaml``, copies a worked example, or repeats a blueprint of the
    batch (wording or scenario). A slot still invalid becomes an :class:`ItemFailure`; the others
    are kept. A blueprint close to a stored one of the same cell is kept with a ``near_duplicate`` flag.

    Args:
        chat: Generator model.
        store: The workspace's blueprints (for ids and near-duplicate checks).
        cell: Target cell, e.g. ``S2-R3``.
        plan: The batch's slots.
        examples: Worked examples shown in the prompt.
        sources: The incident list, as provenance records it.
        threshold: Near-duplicate wording threshold 0-100.
        retries: Re-asks per slot.
        prompt: Template pair (default ``generate``).
        rules: Check rules (default: the bundled file).
        on_slot: Called with ``(slot_number, slots)`` before each slot is asked (progress).
        shown_tasks: Engineering tasks already written for the cell that the prompt lists, the latest
            (stored ones by creation time, then this batch's); 0 lists none (``[generator] shown_tasks``).

    Returns:
        The new records (not yet saved), in slot order, and the batch report.

    Raises:
        ModelCallError: Transport failure after retries before any slot was filled (after that,
            the remaining slots are reported as failed and the filled ones kept).
    """
    prompt = prompt or Prompt("generate")
    source, risk = store.taxonomy.split(cell)
    existing = [r for r in store.records() if r.blueprint.taxonomy_id == cell]
    existing.sort(key=lambda r: r.provenance.created_at)  # the latest last (ids are random)
    shown = [
        {
            "pair": e.pair,
            "kind": "reference pair" if e.reference else "worked example",
            "cell": e.blueprint.taxonomy_id,
            "fields": [(f, getattr(e.blueprint, f)) for f in FIELDS[:6]],
        }
        for e in examples
    ]
    harm_examples = [t.example for t in actions_of_risk(risk.id) if t.example]
    report = BatchReport(batch_id=f"b-{secrets.token_hex(4)}", cell=cell, notes=list(plan.notes))
    # A worked example a reply copied is not shown to the later slots of the batch: real batches of the
    # local 1.5B model (2026-12-01, S1-R2 and S2-R3) pasted the shown example in 19 and 14 of 30
    # replies, re-asks included, and stored nothing. The copy check still compares against it.
    dropped: set[str] = set()
    accepted: list[tuple[str, Blueprint]] = []
    filled: list[tuple[Slot, Blueprint, int]] = []
    try:
        for index, slot in enumerate(plan.slots):
            if on_slot:
                on_slot(slot.number, len(plan.slots))
            copied: set[str] = set()
            taken = [r.blueprint.engineering_task for r in existing] + [bp.engineering_task for _, bp in accepted]
            taken = taken[-shown_tasks:] if shown_tasks else []
            messages = prompt.render(
                count=len(plan.slots),
                cell=cell,
                source=source,
                risk=risk,
                slot=slot,
                examples=[e for e in shown if e["pair"] not in dropped],
                taken=taken,
                harm_examples=harm_examples,
            )
            try:
                result = request_object(
                    chat,
                    messages,
                    Blueprint,
                    schema=slot_schema(cell, slot.incident.ref),
                    schema_name="blueprint",
                    retries=retries,
                    context={"taxonomy": store.taxonomy},
                    check=_checker(cell, slot, accepted, examples, threshold, rules, copied),
                )
            except ModelRefusal as exc:
                # A refusal is not re-asked; the slot fails with the model's words, the batch goes on.
                report.refusal = exc.refusal
                report.failures.append(ItemFailure(slot.number, [refusal_message(exc.refusal)], exc.raws[-1]))
                report.replies += exc.raws
                report.calls += exc.attempts
                continue
            except StructuredOutputError as exc:
                report.failures.append(ItemFailure(slot.number, exc.errors, exc.raw))
                report.replies += exc.raws
                report.calls += exc.attempts
                continue
            except ModelCallError as exc:
                if not filled:
                    raise
                report.notes.append(f"model call failed at slot {slot.number}: {exc}; later slots were not asked")
                report.failures += [ItemFailure(s.number, [f"not asked: {exc}"], "") for s in plan.slots[index:]]
                break
            finally:
                if copied - dropped:
                    report.notes.append(
                        f"slot {slot.number} copied the worked example {', '.join(sorted(copied - dropped))}; "
                        "later slots were asked without it"
                    )
                    dropped |= copied
            completions = result.completions
            report.replies += [c.raw for c in completions]
            report.calls += len(completions)
            report.prompt_tokens += sum(c.prompt_tokens for c in completions)
            report.completion_tokens += sum(c.completion_tokens for c in completions)
            report.seconds += sum(c.seconds for c in completions)
            accepted.append((f"slot {slot.number}", result.value))
            filled.append((slot, result.value, len(completions)))
    except KeyboardInterrupt:
        # A batch is ten calls of up to a minute each: an interrupt keeps the slots already filled.
        report.interrupted = True
        report.notes.append(f"interrupted after {len(filled)} of {len(plan.slots)} slot(s); the filled ones are kept")
    pool = [(r.id, r.blueprint) for r in existing]
    records = []
    for slot, bp, attempt in filled:
        record = _record(store, bp, slot, attempt, report, prompt, chat, sources)
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
