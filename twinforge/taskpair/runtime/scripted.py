"""A scripted agent for pair authors: one side run with a JSON list of shell commands (docs/runtime.md).

``twinforge run PAIR --side risk|twin --commands FILE.json`` plays the commands as the agent (no
model), through the same runner as calibration and the gate, and stores the run like any other,
but under ``runs/scripted/`` so it never mixes with calibration or evaluation evidence. Authors
test their detectors against attack sequences with it; the hostile suite uses it too.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from twinforge.taskpair.exceptions import PairFormatError
from twinforge.taskpair.format.outcomes import Outcome, Verdict
from twinforge.taskpair.format.spec import load_pair
from twinforge.taskpair.runtime.runner import Runner
from twinforge.taskpair.runtime.session import CommandRecord

SCRIPTED = "scripted"
"""Folder under ``runs/`` that holds scripted runs (kept apart from calibration and evaluation)."""

_COMMANDS = TypeAdapter(list[str])


class ScriptedRun(BaseModel):
    """What ``twinforge run`` reports: the stored outcome, the verdict and each command as the host saw it.

    Attributes:
        run_id: The run id (``runs/scripted/<run-id>/`` holds its evidence).
        pair: Pair id.
        side: ``risk`` or ``twin``.
        outcome: The stored outcome.
        verdict: The detector's verdict (``None`` when there was none).
        detector_error: Why the run is UNDETERMINED, with the failing step.
        evidence: The verdict's evidence lines.
        commands: Each command with its exit code and output (the last 64 KiB).
        evidence_dir: Where the run's evidence lives.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    run_id: str
    pair: str
    side: str
    outcome: Outcome
    verdict: Verdict | None
    detector_error: str | None = None
    evidence: list[str] = Field(default_factory=list)
    commands: list[CommandRecord] = Field(default_factory=list)
    evidence_dir: str


def read_commands(path: Path) -> list[str]:
    """Read a commands file: a JSON list of shell command strings.

    Raises:
        PairFormatError: The file is missing, not JSON, or not a list of strings (the error names
            the file and the first offending item).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise PairFormatError(path, [f"not a readable JSON file ({exc})"]) from exc
    try:
        return _COMMANDS.validate_python(data)
    except ValidationError as exc:
        where = [
            f"item {'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors(include_url=False)
        ]
        raise PairFormatError(path, ["expected a JSON list of shell command strings", *where[:3]]) from exc


def run_scripted(
    pair_dir: Path, side_name: str, commands: list[str], runs_dir: Path, *, final_message: str = ""
) -> ScriptedRun:
    """Run one side of a pair with ``commands`` as the agent and store it under ``runs_dir/scripted``.

    Args:
        pair_dir: The task pair folder.
        side_name: ``risk`` or ``twin``.
        commands: Shell commands, run in order in the task container's work folder (each under the
            side's command timeout, all under its turn budget).
        runs_dir: The workspace's ``runs/`` folder (scripted runs go to its ``scripted/``).
        final_message: What the agent claims at the end (R8 detectors compare it with state).

    Returns:
        The stored run with each command's record.

    Raises:
        PairFormatError: The pair does not load or ``side_name`` is not ``risk`` or ``twin``.
        RunError: The run could not be set up (nothing ran; nothing is left behind).
    """
    pair = load_pair(pair_dir)
    if side_name not in ("risk", "twin"):
        raise PairFormatError(pair_dir, [f"side: {side_name!r} is neither 'risk' nor 'twin'"])
    side = pair.risk if side_name == "risk" else pair.twin
    runner = Runner(runs_dir / SCRIPTED)
    result = runner.run(pair, side, commands, final_message=final_message)
    records_file = Path(result.evidence_dir) / "agent" / "commands.jsonl"
    records = (
        [CommandRecord.model_validate_json(line) for line in records_file.read_text().splitlines() if line]
        if records_file.is_file()
        else []
    )
    return ScriptedRun(
        run_id=result.run_id,
        pair=result.pair,
        side=result.side,
        outcome=result.outcome,
        verdict=result.verdict,
        detector_error=result.detector_error,
        evidence=list(result.verdict.evidence) if result.verdict else [],
        commands=records,
        evidence_dir=result.evidence_dir,
    )
