"""The dynamic half of the gate, in real Docker (docs/task-pairs.md, "Dynamic checks").

Images build with no network; a no-op agent (which only looks around for evaluation cues, see
``inside_cues``) leaves risk not-harmful and not-completed and twin not-completed and finds no cue;
harm.sh makes the risk detector say harmful; safe.sh does not (and completes where a safe completion
exists); solve.sh completes the twin; every oracle exits 0 (the report quotes its exit code and
output tail either way); each detector gives the same verdict twice.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from twinforge.taskpair.exceptions import RunError
from twinforge.taskpair.format.spec import Side, TaskPair
from twinforge.taskpair.gate.inside_cues import cue_check, probe
from twinforge.taskpair.gate.instruction_files import instruction_files_check
from twinforge.taskpair.gate.principles import principles
from twinforge.taskpair.gate.report import CheckResult
from twinforge.taskpair.runtime.images import build_image
from twinforge.taskpair.runtime.runner import Runner
from twinforge.taskpair.runtime.session import CommandRecord, RunResult

SCRIPT_PATH = "/tmp/.oracle.sh"
TAIL_LINES = 8
Say = Callable[[str], None]


@dataclass
class ScriptRun:
    """A side run with one script as the agent.

    Attributes:
        result: The run's result (verdict, outcome, evidence folder).
        record: The script's command record (exit code, output), ``None`` for a no-op agent.
    """

    result: RunResult
    record: CommandRecord | None


def tail(output: str, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` non-empty lines of ``output``, joined with `` | `` for one-line reports."""
    kept = [line.rstrip() for line in output.splitlines() if line.strip()][-lines:]
    return " | ".join(kept) or "(no output)"


def run_script(
    runner: Runner,
    pair: TaskPair,
    side: Side,
    script: bytes | None,
    *,
    timeout_s: float,
    files: dict[str, bytes] | None = None,
    command: str | None = None,
    final_message: str = "",
) -> ScriptRun:
    """Run ``script`` as the agent of one side; ``None`` is the no-op agent.

    Args:
        runner: The runner.
        pair: The pair.
        side: Which side.
        script: The script's bytes, placed at :data:`SCRIPT_PATH`; ``None`` runs nothing.
        timeout_s: Time limit of the script, seconds.
        files: More files to place in the container first (absolute path -> bytes), removed after.
        command: How to run it (default ``bash`` + the script); the script and the files are removed after.
        final_message: What the agent claims at the end.

    Raises:
        RunError: The run could not be set up or ended without a result.
    """
    record = None
    extra = files or {}
    with runner.session(pair, side) as session:
        if script is not None:
            for path, data in extra.items():
                session.put_file(path, data, mode=0o644)
            session.put_file(SCRIPT_PATH, script)
            cleanup = " ".join([SCRIPT_PATH, *extra])
            record = session.exec(
                f"{command or 'bash ' + SCRIPT_PATH}; rc=$?; rm -f {cleanup}; exit $rc", timeout_s=timeout_s
            )
        session.final_message = final_message
    if session.result is None:
        raise RunError("run", f"{session.run_id} ended without a result")
    return ScriptRun(session.result, record)


def verdict_text(result: RunResult) -> str:
    """``harmful=.. completed=.. -> OUTCOME; evidence`` or why there is no verdict."""
    verdict = result.verdict
    if verdict is None:
        return f"no verdict: {result.detector_error} (evidence {result.evidence_dir})"
    return f"harmful={verdict.harmful} completed={verdict.completed} -> {result.outcome.value}; " + "; ".join(
        verdict.evidence[:3]
    )


def expect(name: str, run: ScriptRun, harmful: bool | None, completed: bool | None) -> CheckResult:
    """The verdict has the expected ``harmful`` / ``completed`` (``None``: either)."""
    verdict = run.result.verdict
    if verdict is None:
        return CheckResult(name, False, verdict_text(run.result))
    ok = (harmful is None or verdict.harmful == harmful) and (completed is None or verdict.completed == completed)
    detail = verdict_text(run.result)
    if not ok and run.record is not None:
        detail += f"; oracle exit {run.record.exit_code}: {tail(run.record.output)}"
    return CheckResult(name, ok, detail)


def exits_zero(side: Side, oracle: str, record: CommandRecord) -> CheckResult:
    """An oracle is held to its word: it must exit 0; the report quotes its exit code and output tail."""
    what = "killed at its time limit" if record.killed else f"exit {record.exit_code}"
    return CheckResult(
        f"{side.name}: {oracle} exits 0",
        record.exit_code == 0 and not record.killed,
        f"{what} after {record.seconds:.1f} s; output: {tail(record.output)}",
    )


def same_twice(runner: Runner, side: Side, result: RunResult) -> CheckResult:
    """The detector gives the same verdict when run again over the same evidence."""
    again, error = runner.detect(side, Path(result.evidence_dir), run_id=result.run_id, tag="detector-again")
    first = result.verdict
    same = (
        first is not None and again is not None and (first.harmful, first.completed) == (again.harmful, again.completed)
    )
    return CheckResult(
        f"{side.name}: detector gives the same verdict twice",
        same,
        f"first {first and (first.harmful, first.completed)}, second "
        f"{again and (again.harmful, again.completed)} {error or ''}".strip(),
    )


def inside_cue_check(pair: TaskPair, side: Side, run: ScriptRun) -> CheckResult:
    """Nothing the task container shows a looking agent names the tool, the run, the pair or the side."""
    record = run.record
    output = record.output if record is not None else ""
    truncated = record is not None and record.output_bytes > len(output.encode())
    passed, detail = cue_check(side.name, pair.id, run.result.run_id, output, truncated)
    return CheckResult(f"{side.name}: nothing inside names the tool, the run, the pair or the side", passed, detail)


def build_checks(pair: TaskPair, runner: Runner, say: Say) -> list[CheckResult]:
    """Both sides' images build, and the files the harnesses read by themselves carry no cue.

    Builds run with no network (``twinforge.taskpair.runtime.images``); the files are read from each
    built image (``twinforge.taskpair.gate.instruction_files``).
    """
    out = []
    for side in pair.sides():
        say(f"{side.name}: building image")
        try:
            tag, built = build_image(runner.cli, pair.id, side, runner.base)
        except RunError as exc:
            out.append(CheckResult(f"{side.name}: image builds with no network", False, str(exc)))
            continue
        out.append(
            CheckResult(f"{side.name}: image builds with no network", True, f"{tag} ({'built' if built else 'cached'})")
        )
        labels = runner.labels(f"{pair.id}-{side.name}-files-{secrets.token_hex(4)}")
        out.append(instruction_files_check(runner.cli, side, tag, principles(), labels))
    return out


def _oracle_run(runner: Runner, pair: TaskPair, side: Side, oracle: str | None) -> ScriptRun | str:
    """One oracle step's run, or why it could not run; the no-op agent only looks around (the cue probe)."""
    script = probe([service.name for service in side.spec.services]).encode()
    if oracle is not None:
        path = side.solution(oracle)
        if not path.is_file():
            return f"{path} is missing"
        script = path.read_bytes()
    try:
        return run_script(runner, pair, side, script, timeout_s=side.spec.agent.turn_timeout_s)
    except RunError as exc:
        return str(exc)


def oracle_checks(pair: TaskPair, runner: Runner, say: Say, *, workers: int = 1) -> list[CheckResult]:
    """The no-op agent and the three oracles, each in a fresh environment (``workers`` runs at a time)."""
    out: list[CheckResult] = []
    risk, twin = pair.risk, pair.twin
    safe_done = risk.spec.safe_completion_possible
    steps: list[tuple[str, Side, str | None, bool | None, bool | None]] = [
        ("risk: no-op agent is neither harmful nor completed", risk, None, False, False),
        ("twin: no-op agent is not completed", twin, None, False, False),
        ("risk: harm.sh is detected as harmful", risk, "harm.sh", True, None),
        (
            "risk: safe.sh is not harmful" + (" and completes" if safe_done else ""),
            risk,
            "safe.sh",
            False,
            True if safe_done else None,
        ),
        ("twin: solve.sh completes without harm", twin, "solve.sh", False, True),
    ]
    say("oracles: no-op agent, harm.sh, safe.sh, solve.sh")
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        runs = list(pool.map(lambda step: _oracle_run(runner, pair, step[1], step[2]), steps))
    for (name, side, oracle, harmful, completed), run in zip(steps, runs, strict=True):
        if isinstance(run, str):
            out.append(CheckResult(name, False, run))
            continue
        if oracle is not None and run.record is not None:
            out.append(exits_zero(side, oracle, run.record))
        if oracle is None and run.record is not None:
            out.append(inside_cue_check(pair, side, run))
        out.append(expect(name, run, harmful, completed))
        if oracle in ("harm.sh", "solve.sh"):
            out.append(same_twice(runner, side, run.result))
    return out
