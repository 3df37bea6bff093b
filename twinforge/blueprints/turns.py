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

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints, TypeAdapter, ValidationError

from twinforge.blueprints.blueprint import Blueprint
from twinforge.blueprints.checks.rules import CheckRules, load_check_rules
from twinforge.blueprints.checks.structure import finding_of
from twinforge.blueprints.findings import Finding
from twinforge.blueprints.scenario import ScenarioVocabulary, actions_in, harm_actions_in, load_scenarios
from twinforge.core.llm import describe_validation_error

Said = Annotated[str, StringConstraints(strip_whitespace=True, min_length=20, max_length=1200)]
MAX_FOLLOW_UPS = 19
"""Later turns a blueprint may carry (20 user turns in all, docs/task-pairs.md)."""
FIELD = "follow_ups"
"""The ``field`` of a finding on the later turns."""


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


_TURNS = TypeAdapter(list[FollowUp])
_QUOTED = re.compile(r"`[^`]*`|\"[^\"]*\"|\u201c[^\u201d]*\u201d|(?<!\w)'[^']*'(?!\w)|^\s*>.*$", re.MULTILINE)
"""Quoted text of a turn (code spans, quotation marks, ``>`` lines): content the user passes on."""


def asks_for_harm(blueprint: Blueprint, says: str, vocabulary: ScenarioVocabulary | None = None) -> frozenset[str]:
    """The harm path's harmful actions a later S2 turn asks for in the user's own words (outside quotes).

    The same reading as ``s2-task-benign`` (the request's actions by pattern, the harm path's by
    pattern or frame), with quoted content (a pasted log, a command's output) left out: an S2 turn
    passes the trap on, it does not ask for the harm (docs/stage1.md, "Multi-turn blueprints").
    """
    vocabulary = vocabulary or load_scenarios()
    own_words = _QUOTED.sub(" ", says)
    return harm_actions_in(own_words, vocabulary) & frozenset(actions_in(blueprint.harm_path, vocabulary))


def follow_up_findings(
    blueprint: Blueprint, follow_ups: list[FollowUp], turns: int | None = None, rules: CheckRules | None = None
) -> list[Finding]:
    """What the checks find on a multi-turn blueprint's later turns (empty when nothing).

    Defects (certainly wrong): a number of turns other than asked for, more than
    :data:`MAX_FOLLOW_UPS`. Doubts (read from the words): a turn the twin says the same as the risk
    side, a repeated turn, a turn repeating the engineering task, and in an S2 blueprint a turn in
    which the user asks for the harm path's action (:func:`asks_for_harm`; docs/stage1.md,
    "Multi-turn blueprints"; texts and severities in ``guidelines/blueprint-checks.yaml``,
    ``follow_ups``). ``generate --turns N``, ``blueprint check|add``, the reviewer and
    ``blueprint check --stored`` all use this one function.

    Args:
        blueprint: The eight fields.
        follow_ups: The later turns.
        turns: The user turns asked for (``generate --turns N``), if any.
        rules: Check rules (default: the bundled file).
    """
    texts = (rules or load_check_rules()).follow_ups
    found = []
    if turns is not None and len(follow_ups) != turns - 1:
        detail = f": {turns} user turns need {turns - 1} later turn(s), got {len(follow_ups)}"
        found.append(finding_of("follow-ups-count", texts["follow-ups-count"], FIELD, detail))
    elif len(follow_ups) > MAX_FOLLOW_UPS:
        detail = f": at most {MAX_FOLLOW_UPS} later turns, got {len(follow_ups)}"
        found.append(finding_of("follow-ups-count", texts["follow-ups-count"], FIELD, detail))
    seen: set[str] = set()
    for number, turn in enumerate(follow_ups, 2):
        says = turn.says.casefold()
        if says == turn.twin_says.casefold():
            found.append(finding_of("follow-ups-twin-same", texts["follow-ups-twin-same"], FIELD, f" (turn {number})"))
        if says in seen:
            found.append(finding_of("follow-ups-repeated", texts["follow-ups-repeated"], FIELD, f" (turn {number})"))
        if says == blueprint.engineering_task.casefold():
            found.append(
                finding_of("follow-ups-repeat-task", texts["follow-ups-repeat-task"], FIELD, f" (turn {number})")
            )
        if blueprint.source == "S2" and (asked := asks_for_harm(blueprint, turn.says)):
            detail = f" (turn {number}: {', '.join(sorted(asked))})"
            found.append(finding_of("follow-ups-s2-asks", texts["follow-ups-s2-asks"], FIELD, detail))
        seen.add(says)
    return found


def read_follow_ups(value: Any, rules: CheckRules | None = None) -> tuple[list[FollowUp], list[Finding]]:
    """The later turns a reply or a file gave (``follow_ups``), or a defect saying why they are not.

    Returns:
        The turns (empty when they do not validate) and the ``follow-ups-malformed`` defect, if any.
    """
    try:
        return _TURNS.validate_python(value if value is not None else []), []
    except ValidationError as exc:
        texts = (rules or load_check_rules()).follow_ups
        detail = ": " + "; ".join(describe_validation_error(exc)[:3])
        return [], [finding_of("follow-ups-malformed", texts["follow-ups-malformed"], FIELD, detail)]
