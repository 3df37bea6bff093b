"""Follow-up user turns of a multi-turn blueprint, beside its eight fields (docs/stage1.md, "Multi-turn blueprints").

A blueprint keeps exactly the study's eight fields. A multi-turn blueprint's later user turns are
kept beside them in the record (``BlueprintRecord.follow_ups``): what the user says in each later
turn on the risk side, what the user says instead on the twin (a benign follow-up with work of its
own), and when the turn is sent (``always``, or ``unless-harmful``: only while no harm has shown;
docs/task-pairs.md, "Multi-turn pairs"). The Stage I checks read them with the fields
(:func:`follow_up_findings`), the reviewer is shown them, and Stage II builds ``turns/NN.md`` from
them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints

from twinforge.blueprints.blueprint import Blueprint

Said = Annotated[str, StringConstraints(strip_whitespace=True, min_length=20, max_length=1200)]
MAX_FOLLOW_UPS = 19
"""Later turns a blueprint may carry (20 user turns in all, docs/task-pairs.md)."""


class FollowUp(BaseModel):
    """One later user turn of a multi-turn blueprint."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    says: Said
    """What the user says in this turn on the risk side (S1: the harmful request or the pressure
    after a refusal; S2: content the user passes on, such as a pasted log)."""
    twin_says: Said
    """What the user says instead on the capability twin: a benign follow-up that asks for work."""
    send: Literal["always", "unless-harmful"] = "always"
    """When the turn is sent: ``always``, or only while no harm has shown (a pressure turn)."""


class TurnedBlueprint(Blueprint):
    """What a multi-turn Stage I slot answers: the eight fields plus the follow-up turns.

    Only the generator's structured output has this shape; the record keeps the eight fields in
    ``blueprint`` and the turns beside them in ``follow_ups``.
    """

    follow_ups: list[FollowUp]
    """The later user turns, turn 2 first."""

    def split(self) -> tuple[Blueprint, list[FollowUp]]:
        """The eight fields and the turns, apart."""
        return Blueprint.model_validate(self.model_dump(exclude={"follow_ups"})), list(self.follow_ups)


def follow_up_findings(blueprint: Blueprint, follow_ups: list[FollowUp], turns: int | None = None) -> list[str]:
    """What is wrong with a multi-turn blueprint's later turns (empty when nothing is).

    Args:
        blueprint: The eight fields.
        follow_ups: The later turns.
        turns: The user turns asked for (``generate --turns N``), if any.

    Returns:
        One line per problem: a wrong number of turns, a turn the twin says the same, a turn repeated,
        a turn repeating the engineering task, more than :data:`MAX_FOLLOW_UPS`.
    """
    problems = []
    if turns is not None and len(follow_ups) != turns - 1:
        problems.append(f"follow_ups: {turns} user turns need {turns - 1} follow-up turn(s), got {len(follow_ups)}")
    if len(follow_ups) > MAX_FOLLOW_UPS:
        problems.append(f"follow_ups: at most {MAX_FOLLOW_UPS} later turns")
    seen: set[str] = set()
    for number, turn in enumerate(follow_ups, 2):
        if turn.says.casefold() == turn.twin_says.casefold():
            problems.append(f"follow_ups turn {number}: the twin says the same as the risk side (no benign follow-up)")
        if turn.says.casefold() in seen:
            problems.append(f"follow_ups turn {number}: repeats an earlier turn")
        if turn.says.casefold() == blueprint.engineering_task.casefold():
            problems.append(f"follow_ups turn {number}: repeats the engineering task instead of saying something new")
        seen.add(turn.says.casefold())
    return problems
