"""Sending a side's later user turns during a run (docs/runtime.md, "User turns").

A harness (or the gate's scripted agent) calls :meth:`UserTurns.next` each time the agent ends its
turn by itself: the CLI left its print mode, Mini-SWE-agent submitted, an oracle's turn script
ended. ``UserTurns`` closes the turn's record, judges the environment at the boundary (the side's
own detector over evidence collected as at the end: ``Session.judge``), decides from that state
alone whether the next turn is sent (``pair.yaml`` ``follow_ups``: ``always`` or
``unless-harmful``), and starts it: a fresh 900 s budget for the new user turn (the session's
deadline and every registered hook, e.g. the model proxy's), the call cap staying per run.
A turn that ended on a budget, a refusal or a crash ends the conversation: the later turns are
recorded as not sent, with why.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from twinforge.taskpair.format.turns import UserTurn
from twinforge.taskpair.runtime.turn_records import TurnRecord

if TYPE_CHECKING:
    from twinforge.taskpair.runtime.session import Session


class UserTurns:
    """The user's side of a run's conversation.

    Args:
        turns: The side's later user turns (``Side.follow_ups``); empty for a one-turn side.
        session: The live run (its deadline is renewed per turn; its ``judge`` checks a boundary).
        budget_s: The budget of each user turn, seconds (``[agent] turn_timeout_s``, 900).
        on_turn: Called with the new turn's number when a later turn starts (the model proxy renews
            its deadline there).
        calls: The run's agent model calls so far (for the per-turn count; ``None``: not counted).
    """

    def __init__(
        self,
        turns: Sequence[UserTurn],
        session: Session,
        *,
        budget_s: float,
        on_turn: Sequence[Callable[[int], None]] = (),
        calls: Callable[[], int] | None = None,
    ) -> None:
        self.turns = list(turns)
        self.session = session
        self.budget_s = budget_s
        self.on_turn = list(on_turn)
        self.calls = calls
        self.records: list[TurnRecord] = []
        self._calls_at = 0
        self._commands_at = 0
        session.turns = self.records

    @property
    def current(self) -> int:
        """The number of the turn in progress (0 before :meth:`start`)."""
        return self.records[-1].turn if self.records else 0

    @property
    def open(self) -> bool:
        """A turn is in progress (started and not ended)."""
        return bool(self.records) and self.records[-1].ended is None

    def start(self) -> None:
        """Turn 1 starts (the instruction is sent); its budget is the session's from set-up."""
        if not self.records:
            self._mark()
            self.records.append(TurnRecord(turn=1, started=time.time()))

    def next(
        self, *, end: str, final_message: str = "", normal: bool = True, commands: int | None = None
    ) -> UserTurn | None:
        """The agent ended its turn: close it and return the next user turn to send, or ``None``.

        Args:
            end: How the agent ended the turn (its harness's exit status).
            final_message: The agent's last words in the turn (the detector at the boundary sees
                them as the final message).
            normal: The agent ended the turn by itself; False for a budget, a refusal or a crash,
                which end the conversation.
            commands: Commands the agent ran in the turn, when the harness counts them (CLIs);
                otherwise the session's command records are counted.

        Returns:
            The next turn, already started (its budget running), or ``None`` when the run ends.
        """
        self.start()
        record = self._close(end, commands)
        number = record.turn
        if number - 1 >= len(self.turns):
            return None
        reason = ""
        if not normal or record.overtime or self.session.ended:
            reason = f"the run ended in turn {number} ({end or 'no end status'})"
        if not reason and self.session.judge is not None:
            self.session.final_message = final_message
            verdict, _ = self.session.judge(number)
            record.harmful = None if verdict is None else verdict.harmful
        upcoming = self.turns[number - 1]
        if not reason and upcoming.send == "unless-harmful" and record.harmful:
            reason = f"harm showed at the end of turn {number}; turn {upcoming.number} is sent only unless harmful"
        if reason:
            self.records += [TurnRecord(turn=t.number, sent=False, skipped=reason) for t in self.turns[number - 1 :]]
            return None
        self.session.deadline = time.monotonic() + self.budget_s
        for hook in self.on_turn:
            hook(upcoming.number)
        self._mark()
        self.records.append(TurnRecord(turn=upcoming.number, started=time.time()))
        return upcoming

    def finish(self, *, end: str, commands: int | None = None) -> None:
        """The run is over: close the turn in progress (later turns, if any, were never sent)."""
        if self.open:
            self._close(end, commands)
            number = self.records[-1].turn
            self.records += [
                TurnRecord(turn=t.number, sent=False, skipped=f"the run ended in turn {number} ({end})")
                for t in self.turns[number - 1 :]
            ]

    def _mark(self) -> None:
        self._calls_at = self.calls() if self.calls is not None else 0
        self._commands_at = len(self.session.records)

    def _close(self, end: str, commands: int | None) -> TurnRecord:
        record = self.records[-1]
        record.ended = time.time()
        record.end = end[:200]
        record.overtime = self.session.overtime
        record.model_calls = (self.calls() - self._calls_at) if self.calls is not None else 0
        record.commands = commands if commands is not None else len(self.session.records) - self._commands_at
        return record
