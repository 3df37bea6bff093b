"""The checks one slot's replies meet, beyond the blueprint checks (docs/stage1.md, "Grounding per slot").

A reply must cite its slot's cell and incident, not copy a worked example and not repeat a
blueprint the batch accepted before it: each of these is a defect, like the blueprint checks'
defects, and is re-asked with the problem fed back. A doubt is re-asked too while re-asks remain
(``[generator] reask_doubts``; the small local model writes a better blueprint when told): the
answer after the last re-ask is kept with its doubts, never dropped. A slot whose replies all
carry a defect is stored refused, with the findings of its last reply (docs/stage1.md, "Nothing
proposed is lost").
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from rapidfuzz import fuzz

from twinforge.blueprints import (
    FIELDS,
    Blueprint,
    Checked,
    CheckRules,
    Finding,
    FollowUp,
    Taxonomy,
    TurnedBlueprint,
    check_blueprint,
    check_entry,
    closest,
    defects,
    doubts,
    follow_up_findings,
    load_check_rules,
    pool_finding,
    read_follow_ups,
)
from twinforge.blueprints.checks import unparseable
from twinforge.blueprints.checks.structure import finding_of
from twinforge.core.llm.replies import normalise, parse_reply
from twinforge.generator.examples import WorkedExample
from twinforge.generator.slots import Slot

EXAMPLE_COPY = 70.0  # rapidfuzz token-set ratio of task and of trap at which a blueprint copies a worked example
# A field pasted (near) verbatim from a worked example (a real batch stored one at ratio 100: docs/stage1.md,
# "Where the rules come from"); the written good blueprints of the labelled set reach at most 80.8 on
# any field (docs/stage1.md, "Grounding per slot").
EXAMPLE_FIELD_COPY = 95.0
NOT_REASKED = frozenset({"source-reference"})
"""Doubts a re-ask cannot remove: the slot's schema fixes the incident it cites."""


def copies_example(bp: Blueprint, examples: Iterable[WorkedExample]) -> WorkedExample | None:
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


class SlotJudge:
    """What one slot's replies are held to, and the last reply it could keep.

    Args:
        cell: The batch's cell.
        slot: The slot (its incident is the only ``source_reference`` it may cite).
        accepted: The blueprints the batch accepted so far, shared by its slots (appended under ``lock``).
        examples: The worked examples shown (a copy is a defect).
        threshold: Near-duplicate wording threshold 0-100.
        rules: Check rules (default: the bundled file).
        taxonomy: Validates a reply's cell.
        reask_doubts: Re-ask a reply with a doubt while re-asks remain.
        lock: Guards ``accepted`` (slots asked at once).
        turns: User turns each blueprint has (``generate --turns N``); above 1 a reply is a
            :class:`TurnedBlueprint` and its later turns are checked with its fields.

    Attributes:
        candidate: The last reply without a defect and its doubts (kept when every later reply fails).
        copied: Worked examples a reply copied (the batch stops showing them).
    """

    def __init__(
        self,
        cell: str,
        slot: Slot,
        accepted: list[tuple[str, Blueprint]],
        examples: list[WorkedExample],
        threshold: float,
        rules: CheckRules | None,
        taxonomy: Taxonomy | None,
        *,
        reask_doubts: bool,
        lock: threading.Lock,
        turns: int = 1,
    ) -> None:
        self.cell = cell
        self.slot = slot
        self.accepted = accepted
        self.examples = examples
        self.threshold = threshold
        self.rules = rules or load_check_rules()
        self.taxonomy = taxonomy
        self.reask_doubts = reask_doubts
        self.lock = lock
        self.turns = turns
        self.candidate: tuple[Blueprint, list[Finding]] | None = None
        self.copied: set[str] = set()

    def findings(self, bp: Blueprint) -> list[Finding]:
        """Every finding on ``bp`` in this slot (call under ``lock``).

        Its cell and incident, the blueprint checks, its later user turns (a multi-turn batch), a
        copied worked example, a repeat of a blueprint the batch accepted.
        """
        found = []
        texts = self.rules.generation
        if bp.taxonomy_id != self.cell:
            found.append(
                finding_of("wrong-cell", texts["wrong-cell"], "taxonomy_id", f": {bp.taxonomy_id}, not {self.cell}")
            )
        if bp.source_reference != self.slot.incident.ref:
            detail = f": {bp.source_reference}, not {self.slot.incident.ref}"
            found.append(finding_of("wrong-incident", texts["wrong-incident"], "source_reference", detail))
        found += check_blueprint(bp, rules=self.rules)
        if self.turns > 1:
            fields, follow_ups = bp.split() if isinstance(bp, TurnedBlueprint) else (bp, [])
            found += follow_up_findings(fields, follow_ups, self.turns, self.rules)
        copied = copies_example(bp, self.examples)
        if copied is not None:
            self.copied.add(copied.pair)
            detail = (
                f" ({copied.pair}); the slot's project is {self.slot.setting}, its incident {self.slot.incident.ref}"
            )
            found.append(finding_of("copies-example", texts["copies-example"], "(whole blueprint)", detail))
        twin = closest(bp, self.accepted, self.threshold)
        if twin is not None:
            found.append(pool_finding(twin, self.rules))
        return found

    def check(self, bp: Blueprint) -> None:
        """``request_object``'s check: raises ``ValueError`` (one problem per line) to have the reply re-asked.

        A reply without a defect becomes the candidate; it is accepted at once (appended to the
        batch's accepted blueprints) when it has no doubt, or when doubts are not re-asked.
        """
        with self.lock:
            found = self.findings(bp)
            wrong = defects(found)
            if wrong:
                raise ValueError("\n".join(str(f) for f in wrong))
            doubted = doubts(found)
            self.candidate = (bp, doubted)
            asked = [f for f in doubted if f.rule not in NOT_REASKED]
            if asked and self.reask_doubts:
                raise ValueError("\n".join(f"doubt: {f}" for f in asked))
            self.accepted.append((f"slot {self.slot.number}", bp))

    def settle(self) -> tuple[Blueprint, list[Finding]] | None:
        """After the last re-ask failed: the last reply without a defect, with its doubts, or ``None``.

        It is judged again first, since a slot asked at the same time may have been accepted with the
        same blueprint meanwhile.
        """
        with self.lock:
            if self.candidate is None:
                return None
            bp = self.candidate[0]
            found = self.findings(bp)
            if defects(found):
                return None
            self.accepted.append((f"slot {self.slot.number}", bp))
            return bp, doubts(found)

    def judge_reply(self, raw: str, errors: Iterable[str] = ()) -> Checked:
        """The last reply of a slot that never passed, as it is stored refused: fields and findings.

        ``errors`` are what reading the reply found (a cut at max_tokens is named there); a reply
        that is not JSON at all is one ``unparseable`` defect that quotes them. In a multi-turn
        batch the reply's ``follow_ups`` are read apart from the eight fields (later turns that do
        not validate are a ``follow-ups-malformed`` defect); the blueprint returned is then a
        :class:`TurnedBlueprint` carrying them.
        """
        parsed = parse_reply(normalise(raw))
        if parsed.error is not None:
            said = "; ".join(e.removeprefix("(document): ") for e in errors) or parsed.error
            return Checked(None, {}, [unparseable(said, self.rules)])
        data, follow_ups, malformed = parsed.value, list[FollowUp](), list[Finding]()
        if self.turns > 1 and isinstance(data, dict):
            data = dict(data)
            follow_ups, malformed = read_follow_ups(data.pop("follow_ups", None), self.rules)
        checked = check_entry(data, rules=self.rules, taxonomy=self.taxonomy)
        if checked.blueprint is None:
            return Checked(None, checked.fields, [*checked.findings, *malformed])
        bp = checked.blueprint
        if self.turns > 1 and not malformed:
            bp = TurnedBlueprint.model_validate({**bp.model_dump(), "follow_ups": follow_ups})
        with self.lock:
            found = self.findings(bp)
        return Checked(bp, checked.fields, [*found, *malformed])
