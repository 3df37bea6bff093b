"""Archetype mode, one round: the model fills the slots, code renders, the static gate re-asks.

The slot fill goes through the structured-output layer (schema errors re-asked with the errors fed
back, ``[models.implementer] validation_retries`` times); a render that fails a static gate check
goes back to the model as one more re-ask with the failing checks and their hints, up to
``[implementer] slot_reasks`` times (docs/implementer.md, "Archetype mode").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from twinforge.blueprints import Blueprint
from twinforge.core.exceptions import StructuredOutputError
from twinforge.core.llm import ChatModel, Completion, Message, request_object
from twinforge.core.prompts import Prompt
from twinforge.implementer.archetypes.render import render_pair
from twinforge.implementer.archetypes.spec import Archetype
from twinforge.implementer.hints import failing_text
from twinforge.implementer.record import SlotAttempt
from twinforge.taskpair.exceptions import PairFormatError
from twinforge.taskpair.format.spec import load_pair
from twinforge.taskpair.gate.validate import CheckResult, static_checks


@dataclass
class FillResult:
    """What one round's slot fill produced.

    Attributes:
        slots: The last valid fill (``None``: none validated).
        checks: The static checks of the last render (empty when nothing rendered).
        attempts: One entry per fill, in order.
        completions: Every model call that returned.
        failed_calls: Calls of fills that never validated (their token use is unknown).
    """

    slots: BaseModel | None = None
    checks: list[CheckResult] = field(default_factory=list)
    attempts: list[SlotAttempt] = field(default_factory=list)
    completions: list[Completion] = field(default_factory=list)
    failed_calls: int = 0

    @property
    def passed(self) -> bool:
        """The last render passed every static check."""
        return bool(self.checks) and all(c.passed for c in self.checks)


def static_report(pair_root: Path) -> list[CheckResult]:
    """The static gate on a rendered pair (a pair that does not load is one failed format check)."""
    try:
        return static_checks(load_pair(pair_root))
    except PairFormatError as exc:
        return [CheckResult("format", False, str(exc))]


def fill_round(
    chat: ChatModel,
    prompt: Prompt,
    archetype: Archetype,
    *,
    blueprint_id: str,
    blueprint: Blueprint,
    risk_name: str,
    pair_root: Path,
    reasks: int,
    retries: int,
    feedback: str | None = None,
    turns: int = 1,
) -> FillResult:
    """Fill, render and statically check until the render passes or the re-asks are used up.

    Args:
        chat: The implementer model.
        prompt: The ``slots`` prompt (``guidelines/implementer/slots.*.j2``).
        archetype: The chosen archetype.
        blueprint_id: The blueprint's id.
        blueprint: Its eight fields.
        risk_name: The risk category's name (for the prompt).
        pair_root: Where the pair is rendered (replaced on every attempt).
        reasks: Re-asks after static gate failures.
        retries: Schema re-asks per fill (structured-output layer).
        feedback: The previous round's gate report, when this is not the first round.
        turns: User turns of the blueprint (2: the archetype's multi-turn variant is rendered).

    Returns:
        The fills, the last render's static checks and the calls made.

    Raises:
        ModelCallError: A transport failure on the first call of a fill.
    """
    result = FillResult()
    base = prompt.render(
        blueprint_id=blueprint_id,
        cell=blueprint.taxonomy_id,
        risk_name=risk_name,
        blueprint=blueprint,
        mechanism=archetype.spec.mechanism,
        slots={name: slot.model_dump() for name, slot in archetype.spec.slots.items()},
    )
    messages = base if feedback is None else [*base, Message(role="user", content=feedback)]
    for n in range(1, reasks + 2):
        try:
            filled = request_object(chat, messages, archetype.slot_model, retries=retries, schema_name="slots")
        except StructuredOutputError as exc:
            result.failed_calls += exc.attempts
            result.attempts.append(SlotAttempt(n=n, errors=exc.errors[:20], calls=exc.attempts))
            return result
        result.completions += filled.completions
        result.slots = filled.value
        render_pair(
            archetype,
            filled.value,
            pair_root=pair_root,
            blueprint_id=blueprint_id,
            blueprint=blueprint,
            model=chat.name,
            turns=turns,
        )
        result.checks = static_report(pair_root)
        failed = [c.name for c in result.checks if not c.passed]
        result.attempts.append(
            SlotAttempt(n=n, slots=filled.value.model_dump(), failed_checks=failed, calls=len(filled.completions))
        )
        if not failed:
            return result
        messages = [
            *messages,
            Message(role="assistant", content=filled.completions[-1].text),
            Message(
                role="user",
                content="The repository built from these values failed the checks below.\n"
                + failing_text(result.checks, "slots")
                + "\nReply with the corrected JSON object, every key again.",
            ),
        ]
    return result
