"""A multi-turn run's user turns in its one ATIF trajectory (docs/observer.md, "One trajectory format").

A multi-turn side's user speaks again each time the agent ended its turn (docs/runtime.md, "User
turns"). A CLI harness runs its CLI once per user turn, resuming its own session: each process's
output is a file of its own (``agent/harness.stdout.jsonl`` for turn 1, then
``agent/harness.turn-NN.stdout.jsonl``), and ``agent/harness.json`` lists the turns (``turns``:
``turn``, ``stdout``, ``sent_at`` in Unix seconds and, for a later turn, ``said``, what the user
said). Each turn is read on its own (:func:`read_turn`: the CLI's output, or the proxy transcript's
calls made during the turn when the output holds no agent step) and the readings are joined in
order (:func:`join_turns`): a later turn is one user step at the time it was sent
(``extra.user_turn``: its number) before that turn's agent steps, and the agent steps keep
counting model calls (``extra.call``) across turns, so step n is still model call n.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from twinforge.observer.trajectory.atif import AtifTrajectory, FinalMetrics, Step
from twinforge.observer.trajectory.harnesses.proxy import read_proxy

Reader = Callable[..., AtifTrajectory]
"""A CLI's reader: ``(events, task=..., version=...) -> AtifTrajectory``."""


@dataclass(frozen=True)
class TurnPart:
    """One user turn of a CLI run, as ``agent/harness.json`` records it.

    Attributes:
        number: The turn (1: the instruction).
        said: What the user said ('' for turn 1 when only the transcript knows it).
        sent_at: When it was sent, Unix seconds (``None``: not recorded).
        stream: The CLI's output for the turn, relative to the run folder.
    """

    number: int
    said: str
    sent_at: float | None
    stream: str


def turn_parts(harness: dict[str, Any], task: str, first_stream: str) -> list[TurnPart]:
    """The user turns ``harness.json`` records, turn 1 first; one turn when it records none.

    Args:
        harness: The content of ``agent/harness.json``.
        task: Turn 1's text (from the transcript).
        first_stream: Turn 1's output file (``agent/harness.stdout.jsonl``).
    """
    records = [r for r in harness.get("turns") or [] if isinstance(r, dict)]
    parts: list[TurnPart] = []
    for record in records:
        number = int(record.get("turn") or len(parts) + 1)
        name = str(record.get("stdout") or "")
        sent = record.get("sent_at")
        parts.append(
            TurnPart(
                number,
                task if number == 1 else str(record.get("said") or ""),
                float(sent) if isinstance(sent, int | float) else None,
                f"agent/{name}" if name else first_stream,
            )
        )
    return parts or [TurnPart(1, task, None, first_stream)]


def calls_during(entries: list[dict[str, Any]], start: float | None, end: float | None) -> list[dict[str, Any]]:
    """The transcript lines of calls that ended from ``start`` to before ``end`` (``None``: open)."""
    found = []
    for entry in entries:
        at = entry.get("at")
        when = float(at) if isinstance(at, int | float) else None
        if when is None or ((start is None or when >= start) and (end is None or when < end)):
            found.append(entry)
    return found


def read_turn(
    reader: Reader, events: list[dict[str, Any]], entries: list[dict[str, Any]], said: str, version: str
) -> tuple[AtifTrajectory, bool]:
    """One user turn of a CLI run: its output read by ``reader``, or the turn's proxy calls when it holds no agent step.

    Args:
        reader: The CLI's reader.
        events: The CLI's JSON events of the turn.
        entries: The transcript lines of the turn's calls (:func:`calls_during`).
        said: What the user said in the turn.
        version: The CLI's version.

    Returns:
        The turn's trajectory, and whether it was read from the transcript.
    """
    document = reader(events, task=said, version=version)
    if not any(s.source == "agent" for s in document.steps) and any(e.get("role") == "agent" for e in entries):
        return read_proxy(entries, said, document.agent), True
    return document, False


def _iso(seconds: float | None) -> str | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC).isoformat()


def join_turns(turns: list[tuple[TurnPart, AtifTrajectory]]) -> AtifTrajectory:
    """The turns' readings as one trajectory (the first's agent, the last's end).

    A later turn's own leading user steps (its reader's copy of what the user said) are replaced by
    one user step with ``extra.user_turn`` and the time it was sent; the agent steps' ``extra.call``
    counts on from the turns before.
    """
    (_, first), *later = turns
    if not later:
        return first
    steps = list(first.steps)
    calls = sum(1 for s in first.steps if s.source == "agent" and s.llm_call_count != 0)
    for part, document in later:
        body = list(document.steps)
        while body and body[0].source == "user" and not (body[0].extra or {}).get("observer"):
            body.pop(0)
        said = part.said or next((s.text for s in document.steps if s.source == "user"), "")
        steps.append(
            Step(
                step_id=1,
                source="user",
                message=said,
                timestamp=_iso(part.sent_at),
                extra={"user_turn": part.number},
            )
        )
        for step in body:
            extra = dict(step.extra or {})
            if isinstance(extra.get("call"), int):
                extra["call"] += calls
            steps.append(step.model_copy(update={"extra": extra or None}))
        calls += sum(1 for s in body if s.source == "agent" and s.llm_call_count != 0)
    numbered = [step.model_copy(update={"step_id": i}) for i, step in enumerate(steps, 1)]
    last = turns[-1][1]
    extra = {**(first.extra or {}), **(last.extra or {})}
    metered = [d.final_metrics for _, d in turns if d.final_metrics is not None]
    totals = FinalMetrics(
        total_prompt_tokens=_total(m.total_prompt_tokens for m in metered),
        total_completion_tokens=_total(m.total_completion_tokens for m in metered),
        total_steps=len(numbered),
    )
    return AtifTrajectory(
        session_id=first.session_id,
        agent=first.agent,
        steps=numbered,
        final_metrics=totals,
        extra=extra or None,
    )


def _total(values: Any) -> int | None:
    found = [v for v in values if v is not None]
    return sum(found) if found else None
