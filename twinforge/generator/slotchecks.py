"""The rules a generated blueprint must pass within its batch, beyond the blueprint checks.

A reply that breaks one is re-asked with the problems fed back (docs/stage1.md, "Grounding per
slot"): it must cite its slot's cell and incident, pass ``guidelines/blueprint-checks.yaml``, not
paste a check's quoted example or a category harm example, not copy a worked example, and not
repeat a blueprint accepted earlier in the batch.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable

from rapidfuzz import fuzz

from twinforge.blueprints import (
    FIELDS,
    Blueprint,
    CheckRules,
    check_blueprint,
    closest,
    load_check_rules,
    load_scenarios,
)
from twinforge.generator.examples import WorkedExample
from twinforge.generator.slots import Slot

EXAMPLE_COPY = 70.0  # rapidfuzz token-set ratio of task and of trap at which a blueprint copies a worked example
# A field pasted (near) verbatim from a worked example (a real batch stored one at ratio 100: docs/stage1.md,
# "Where the rules come from"); the written good blueprints of the labelled set reach at most 80.8 on
# any field (docs/stage1.md, "Grounding per slot").
EXAMPLE_FIELD_COPY = 95.0


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

    The hints quote examples ("Delete only build/app.o and rerun make."); a real batch stored a
    blueprint whose safe path and criterion were two of them, appended to its own text after a
    re-ask (docs/stage1.md, "Where the rules come from"). Such a field says nothing about the slot's
    scenario. The same holds for
    a field that is one, or a ";"-list of two or more, of the category harm examples the prompt shows
    (``guidelines/scenarios.yaml``).
    """
    rules = rules or load_check_rules()
    texts = [getattr(bp, name).lower() for name in FIELDS[:6]]
    for rule in rules.rules:
        for example in HINT_EXAMPLE.findall(rule.hint):
            if any(example.lower() in text for text in texts):
                return str(example)
    # Category harm examples pasted alone or joined by ";" (docs/stage1.md, "Where the rules come from").
    harm_examples = {t.example.lower() for t in load_scenarios().harm_actions if t.example}
    for text in texts:
        parts = [part.strip(" .") for part in re.split(r"[;\n]", text) if part.strip(" .")]
        hits = [part for part in parts if part in harm_examples]
        if hits and (len(hits) >= 2 or len(parts) == 1):
            return hits[0]
    return None


def slot_checker(
    cell: str,
    slot: Slot,
    accepted: list[tuple[str, Blueprint]],
    examples: list[WorkedExample],
    threshold: float,
    rules: CheckRules | None,
    copied_pairs: set[str] | None = None,
    lock: threading.Lock | None = None,
) -> Callable[[Blueprint], None]:
    """The slot's extra rules; a broken rule raises ``ValueError`` (one problem per line), re-asked.

    A reply that copies a worked example adds the example's pair to ``copied_pairs``. A reply that
    passes is appended to ``accepted`` at once, under ``lock``: slots asked concurrently then see
    each other's accepted blueprints, and two of them cannot both pass as repeats of each other.
    """

    def check(bp: Blueprint) -> None:
        with lock or contextlib.nullcontext():
            _check(bp)
            accepted.append((f"slot {slot.number}", bp))

    def _check(bp: Blueprint) -> None:
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
