"""Follow-up user turns of a side (docs/task-pairs.md, "Multi-turn pairs").

``instruction.md`` is turn 1. A side may hold later user turns as ``turns/02.md``, ``turns/03.md``,
... (numbered without gaps); each is sent when the agent ends its previous turn. ``pair.yaml``
declares them in ``follow_ups``, one entry per later turn and the same on both sides (the twin of
a multi-turn risk task has the same turn structure with benign follow-ups). An entry says when
the turn is sent, from the environment's state only, never from an LLM reading the transcript:

- ``always``: whenever the agent ended its previous turn by itself;
- ``unless-harmful``: only while the side's own detector, run at the turn boundary over evidence
  collected as at the end, finds no harm (a pressure turn is not wasted on an agent that already
  did the harm).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from twinforge.taskpair.exceptions import PairFormatError

TURNS_DIR = "turns"
"""Folder of the follow-up turns, relative to the side folder."""
TURN_FILE = re.compile(r"^(\d{2})\.md$")
SendRule = Literal["always", "unless-harmful"]
MAX_TURNS = 20
"""Most user turns a side may have (the reference study's pairs average 14.7 interaction turns,
counting agent steps; a user rarely speaks more than a few times)."""


class FollowUpTurn(BaseModel):
    """One later user turn as ``pair.yaml`` declares it (``follow_ups``, in turn order from turn 2)."""

    model_config = ConfigDict(extra="forbid")

    send: SendRule = "always"
    """When the turn is sent: ``always``, or ``unless-harmful`` (only while the detector at the turn
    boundary finds no harm)."""
    purpose: str = Field("", max_length=300)
    """What the turn does in the scenario, in words (``the user insists, citing a deadline``)."""


@dataclass(frozen=True)
class UserTurn:
    """One later user turn of a side, loaded.

    Attributes:
        number: The turn's number (2 for ``turns/02.md``).
        path: Its file relative to the side folder (``turns/02.md``).
        text: What the user says.
        send: When it is sent (see :class:`FollowUpTurn`).
    """

    number: int
    path: str
    text: str
    send: SendRule = "always"


def turn_path(number: int) -> str:
    """The file of turn ``number`` relative to the side folder: ``turns/02.md``."""
    return f"{TURNS_DIR}/{number:02d}.md"


def load_follow_ups(side_root: Path, declared: list[FollowUpTurn]) -> list[UserTurn]:
    """The side's later user turns, checked against ``pair.yaml`` ``follow_ups``.

    Args:
        side_root: ``<pair>/<risk|twin>``.
        declared: ``pair.yaml``'s ``follow_ups``.

    Returns:
        One :class:`UserTurn` per declared entry, turn 2 first.

    Raises:
        PairFormatError: A file that is not ``NN.md`` in ``turns/``, numbers with a gap or not from
            02, a file not declared in ``pair.yaml`` (or a declared turn without its file), an empty
            turn, or more than :data:`MAX_TURNS` turns; the error names the file.
    """
    folder = side_root / TURNS_DIR
    found: dict[int, Path] = {}
    problems: list[str] = []
    if folder.is_dir():
        for entry in sorted(folder.iterdir()):
            match = TURN_FILE.match(entry.name)
            if match is None or not entry.is_file() or entry.is_symlink():
                problems.append(f"{TURNS_DIR}/{entry.name}: a follow-up turn is a regular file named NN.md (02.md)")
                continue
            found[int(match.group(1))] = entry
    numbers = sorted(found)
    if numbers and numbers != list(range(2, len(numbers) + 2)):
        problems.append(f"{TURNS_DIR}/: turns are numbered 02, 03, ... without gaps (found {numbers})")
    if len(numbers) + 1 > MAX_TURNS:
        problems.append(f"{TURNS_DIR}/: at most {MAX_TURNS} user turns")
    if len(numbers) != len(declared):
        problems.append(
            f"{TURNS_DIR}/ holds {len(numbers)} follow-up turn(s) but pair.yaml follow_ups declares {len(declared)}"
        )
    if problems:
        raise PairFormatError(side_root, problems)
    turns = []
    for number, rule in zip(numbers, declared, strict=True):
        try:
            text = found[number].read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise PairFormatError(found[number], ["not UTF-8 text"]) from exc
        if not text.strip():
            raise PairFormatError(found[number], ["an empty user turn"])
        turns.append(UserTurn(number, turn_path(number), text, rule.send))
    return turns
