"""User turns in the report: interaction turns per run, ASR by the turn of harm, multi-turn pairs apart.

docs/calibration.md, "User turns in the report". Per combination (purpose, model, harness), over the
runs the report counts (:func:`twinforge.evaluation.report.latest_runs`):

- **user turns per run**: the user turns a run sent (a run recorded before turns were recorded
  counts one);
- **agent steps per run**: the agent's model calls (each reply of the agent is one step);
- **interaction turns per run**: user turns plus agent steps, i.e. every message of the conversation
  but the tool results, which is how we read the reference study's "14.7 interaction turns on
  average" (its tasks were multi-turn and counted the agent's replies);
- CAP and ASR@k of the one-turn and the multi-turn pairs apart (a pair is multi-turn when its runs
  recorded more than one user turn);
- **ASR by turn of harm**: over the eligible multi-turn pairs, the share with a COMPROMISED risk run
  whose harm first showed by the end of turn t (t = 1, 2, ...), cumulative, so its last value is
  their ASR@k.
"""

from __future__ import annotations

from collections import defaultdict

from pydantic import BaseModel, ConfigDict, Field

from twinforge.evaluation.tables import Combination
from twinforge.runs.metrics import Metrics, compute
from twinforge.runs.records import RunRow
from twinforge.runs.rules import is_compromised, outcome


class TurnStats(BaseModel):
    """User turns and agent steps of one combination, and its one-turn and multi-turn pairs apart.

    Attributes:
        purpose: ``calibration`` or ``evaluation``.
        model: ``provider:model``.
        harness: Harness key.
        k: Runs per side.
        runs: Runs counted.
        user_turns: Average user turns sent per run (``None`` without runs).
        agent_steps: Average agent model calls per run.
        interaction_turns: ``user_turns + agent_steps``.
        single: CAP and ASR@k of the one-turn pairs.
        multi: CAP and ASR@k of the multi-turn pairs.
        asr_by_turn: Over the eligible multi-turn pairs: the share compromised with harm first
            showing by the end of turn 1, 2, ... (cumulative); empty without eligible multi-turn pairs.
        harm_turns: COMPROMISED risk runs by the turn in which harm first showed (all pairs).
    """

    model_config = ConfigDict(extra="forbid")

    purpose: str
    model: str
    harness: str
    k: int
    runs: int = 0
    user_turns: float | None = None
    agent_steps: float | None = None
    interaction_turns: float | None = None
    single: Metrics
    multi: Metrics
    asr_by_turn: list[float] = Field(default_factory=list)
    harm_turns: dict[int, int] = Field(default_factory=dict)


def _sent(row: RunRow) -> tuple[int, int | None, int]:
    """``(user turns sent, harm turn, turns declared)`` of one stored run."""
    finished = row.finished()
    detail = finished.detail if finished is not None else None
    if detail is None or not detail.turns:
        return 1, 1 if is_compromised(outcome(row.outcome)) else None, 1
    sent = sum(1 for t in detail.turns if t.sent) or 1
    return sent, detail.harm_turn, len(detail.turns)


def turn_stats(rows: list[RunRow], combos: list[Combination]) -> list[TurnStats]:
    """One :class:`TurnStats` per combination, in the combinations' order.

    Args:
        rows: The runs the report counts (latest digest and budgets per pair).
        combos: The report's combinations (their per-pair outcomes).
    """
    by_key: dict[tuple[str, str, str], list[RunRow]] = defaultdict(list)
    for row in rows:
        by_key[(row.purpose, row.model, row.harness)].append(row)
    out = []
    for combo in combos:
        mine = by_key[(combo.purpose, combo.model, combo.harness)]
        facts = {(r.pair, r.side, r.k): _sent(r) for r in mine}
        multi_ids = {pair for (pair, _, _), (_, _, declared) in facts.items() if declared > 1}
        single = [p for p in combo.runs if p.pair not in multi_ids]
        multi = [p for p in combo.runs if p.pair in multi_ids]
        user = [sent for sent, _, _ in facts.values()]
        steps = [r.calls or 0 for r in mine]
        harm_turns: dict[int, int] = defaultdict(int)
        for (_, side, _), (_, turn, _) in facts.items():
            if side == "risk" and turn is not None:
                harm_turns[turn] += 1
        multi_metrics = compute(multi, combo.k)
        eligible = [p for p in multi if p.eligible(combo.k)]
        longest = max([declared for _, _, declared in facts.values()], default=1)
        by_turn = []
        for t in range(1, longest + 1) if eligible else ():
            hit = 0
            for p in eligible:
                turns = [facts.get((p.pair, "risk", k), (0, None, 0))[1] for k in range(1, combo.k + 1)]
                hit += any(turn is not None and turn <= t for turn in turns)
            by_turn.append(hit / len(eligible))
        mean_user = sum(user) / len(user) if user else None
        mean_steps = sum(steps) / len(steps) if steps else None
        out.append(
            TurnStats(
                purpose=combo.purpose,
                model=combo.model,
                harness=combo.harness,
                k=combo.k,
                runs=len(mine),
                user_turns=mean_user,
                agent_steps=mean_steps,
                interaction_turns=None if mean_user is None or mean_steps is None else mean_user + mean_steps,
                single=compute(single, combo.k),
                multi=multi_metrics,
                asr_by_turn=by_turn,
                harm_turns=dict(sorted(harm_turns.items())),
            )
        )
    return out
