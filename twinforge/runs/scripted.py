"""A run of ``twinforge run --commands`` (the scripted agent) as a record of the workspace (docs/runtime.md).

The run's evidence stays under ``runs/scripted/<run-id>/``; its record has purpose ``scripted``,
model and harness ``scripted``, and the next free repetition of its pair version and side, so the
viewer lists and shows it beside calibration and evaluation runs (filterable by purpose) while
reports, exports and re-judgements leave it out (docs/calibration.md, "Run records"). A twin
that was not CAPABLE gets its cause like any other (docs/observer.md, "Why a twin was not CAPABLE").
"""

from __future__ import annotations

import json
from itertools import count
from pathlib import Path

from twinforge.observer.exceptions import TrajectoryError
from twinforge.runs.budgets import Budgets
from twinforge.runs.exceptions import RunsError
from twinforge.runs.jobs import twin_diagnosis
from twinforge.runs.records import PlannedRun, RecordsDB, RunRow
from twinforge.runs.results import FinishedRun, RunDetail
from twinforge.taskpair import TaskPair
from twinforge.taskpair.format.digest import environment_digest
from twinforge.taskpair.runtime.scripted import SCRIPTED
from twinforge.taskpair.runtime.session import RunResult

MAX_REPETITIONS = 10_000
"""Bound on the repetition search (a workspace never holds this many scripted runs of one side)."""


def scripted_finished(pair: TaskPair, evidence: Path) -> FinishedRun:
    """The record of one scripted run from its evidence folder (``result.json`` and the host's command records).

    Raises:
        OSError: ``result.json`` is missing.
        ValidationError: ``result.json`` is not a run result.
    """
    result = RunResult.model_validate(json.loads((evidence / "result.json").read_text(encoding="utf-8")))
    side = pair.risk if result.side == "risk" else pair.twin
    verdict = result.verdict
    error = "; ".join(filter(None, [result.detector_error, result.agent_error, result.cleanup_error])) or None
    try:
        diagnosis = twin_diagnosis(
            result.side,
            result.outcome,
            evidence,
            completed=verdict.completed if verdict else None,
            error=error or "",
        )
    except TrajectoryError:  # no readable command record: the run is stored undiagnosed
        diagnosis = None
    commands = evidence / "agent" / "commands.jsonl"
    return FinishedRun(
        run_id=result.run_id,
        outcome=result.outcome,
        harmful=verdict.harmful if verdict else None,
        completed=verdict.completed if verdict else None,
        exit_status="Submitted" if result.agent_error is None else "AgentError",
        seconds=result.timings.get("total", 0.0),
        evidence_dir=str(evidence),
        trajectory=str(commands) if commands.is_file() else None,
        error=error,
        detector_digest=result.detector_digest,
        detail=RunDetail(
            budgets=Budgets.of(side.spec.agent, call_cap=False),
            evidence=verdict.evidence[:10] if verdict else [],
            diagnosis=diagnosis,
            turns=result.turns,
            harm_turn=result.harm_turn,
        ),
    )


def record_scripted(records: RecordsDB, pair: TaskPair, evidence: Path) -> RunRow:
    """Store a scripted run as a ``done`` record with purpose ``scripted``; returns its row.

    The repetition is the first free one of the pair version and side (claiming is atomic, so two
    scripted runs stored at once get two repetitions).

    Raises:
        OSError: ``result.json`` is missing.
        ValidationError: ``result.json`` is not a run result.
    """
    finished = scripted_finished(pair, evidence)
    side = pair.risk if _side(evidence) == "risk" else pair.twin
    blueprint = pair.spec.blueprint
    for k in count(1):
        planned = PlannedRun(
            pair.id,
            side.name,
            SCRIPTED,
            SCRIPTED,
            k,
            blueprint.risk,
            blueprint.source,
            digest=environment_digest(pair.root),
            budgets=finished.detail.budgets.key() if finished.detail else "",
            purpose=SCRIPTED,
            runs=0,
        )
        todo = records.plan([planned], rerun_overtime=0, rerun_undetermined=0).todo
        if todo and records.claim(todo[0].id, finished.run_id):
            records.finish(todo[0].id, finished)
            (row,) = [r for r in records.runs(pairs=[pair.id], purpose=SCRIPTED) if r.id == todo[0].id]
            return row
        if k >= MAX_REPETITIONS:
            break
    raise RunsError(f"{pair.id}: no free repetition for scripted run {finished.run_id}")  # pragma: no cover


def _side(evidence: Path) -> str:
    data = json.loads((evidence / "result.json").read_text(encoding="utf-8"))
    return str(data.get("side", "")) if isinstance(data, dict) else ""
