"""The dynamic half of the gate, in real Docker (docs/task-pairs.md, "Dynamic checks").

Images build with no network; a no-op agent (which only looks around for evaluation cues, see
``inside_cues``) leaves risk not-harmful and not-completed and twin not-completed and finds no cue;
harm.sh makes the risk detector say harmful; safe.sh does not (and completes where a safe completion
exists); solve.sh completes the twin; every oracle exits 0 (the report quotes its exit code and
output tail either way); each detector gives the same verdict twice.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Container
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
from twinforge.taskpair.runtime.session import MAX_OUTPUT_CHARS, CommandRecord, RunResult
from twinforge.taskpair.runtime.turns import UserTurns

SCRIPT_PATH = "/tmp/.oracle.sh"
TAIL_LINES = 8
Say = Callable[[str], None]


@dataclass
class ScriptRun:
    """A side run with one script as the agent.

    Attributes:
        result: The run's result (verdict, outcome, evidence folder, user turns).
        record: The script's command record (exit code, output), ``None`` for a no-op agent; on a
            multi-turn side, the script's runs of every turn together (the first non-zero exit,
            every turn's output).
    """

    result: RunResult
    record: CommandRecord | None


def tail(output: str, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` non-empty lines of ``output``, joined with `` | `` for one-line reports."""
    kept = [line.rstrip() for line in output.splitlines() if line.strip()][-lines:]
    return " | ".join(kept) or "(no output)"


def _merged(records: list[CommandRecord]) -> CommandRecord | None:
    """One record for a script that ran once per user turn."""
    if len(records) <= 1:
        return records[0] if records else None
    failed = next((r for r in records if r.exit_code != 0 or r.killed), None)
    return CommandRecord(
        command=records[0].command,
        exit_code=failed.exit_code if failed else 0,
        output="\n".join(r.output for r in records)[-MAX_OUTPUT_CHARS:],
        seconds=round(sum(r.seconds for r in records), 3),
        killed=any(r.killed for r in records),
        output_bytes=sum(r.output_bytes for r in records),
    )


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
    act_in: Container[int] | None = None,
) -> ScriptRun:
    """Run ``script`` as the agent of one side; ``None`` is the no-op agent.

    The script runs once in each user turn it acts in, with the turn's number as its last argument
    (``bash harm.sh 2``), so an oracle may act in any turn (docs/task-pairs.md, "Multi-turn
    pairs"); the side's later turns are sent as for any agent (a conditional turn only while the
    detector at the boundary finds no harm).

    Args:
        runner: The runner.
        pair: The pair.
        side: Which side.
        script: The script's bytes, placed at :data:`SCRIPT_PATH`; ``None`` runs nothing.
        timeout_s: Time limit of the script in one turn, seconds.
        files: More files to place in the container first (absolute path -> bytes), removed after.
        command: How to run it (default ``bash`` + the script); the script and the files are removed after.
        final_message: What the agent claims at the end of each turn.
        act_in: The turns the script acts in (``None``: every turn); in the others the agent does nothing.

    Raises:
        RunError: The run could not be set up or ended without a result.
    """
    records: list[CommandRecord] = []
    extra = files or {}
    with runner.session(pair, side) as session:
        turns = UserTurns(side.follow_ups, session, budget_s=side.spec.agent.turn_timeout_s)
        turns.start()
        number = 1
        while True:
            record = None
            if script is not None and (act_in is None or number in act_in):
                for path, data in extra.items():
                    session.put_file(path, data, mode=0o644)
                session.put_file(SCRIPT_PATH, script)
                cleanup = " ".join([SCRIPT_PATH, *extra])
                run = f"{command or 'bash ' + SCRIPT_PATH} {number}"
                record = session.exec(f"{run}; rc=$?; rm -f {cleanup}; exit $rc", timeout_s=timeout_s)
                records.append(record)
            end = "no-op" if record is None else f"exit {record.exit_code}"
            upcoming = turns.next(
                end=end, final_message=final_message, normal=record is None or not record.killed, commands=None
            )
            if upcoming is None:
                break
            number = upcoming.number
        session.final_message = final_message
    if session.result is None:
        raise RunError("run", f"{session.run_id} ended without a result")
    return ScriptRun(session.result, _merged(records))


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


def turns_sent(side: Side, agent: str, result: RunResult) -> CheckResult:
    """Report which user turns a multi-turn run sent, and the detector at each boundary (a passing row)."""
    said = ", ".join(
        f"turn {t.turn} " + (f"sent (harmful at its end: {t.harmful})" if t.sent else f"not sent: {t.skipped}")
        for t in result.turns
    )
    return CheckResult(f"{side.name}: {agent}: user turns", True, said or "no turns recorded")


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


def _oracle_run(
    runner: Runner, pair: TaskPair, side: Side, oracle: str | None, act_in: Container[int] | None = None
) -> ScriptRun | str:
    """One oracle step's run, or why it could not run; the no-op agent only looks around (the cue probe, in turn 1)."""
    script = probe([service.name for service in side.spec.services]).encode()
    if oracle is None:
        act_in = {1}
    else:
        path = side.solution(oracle)
        if not path.is_file():
            return f"{path} is missing"
        script = path.read_bytes()
    try:
        return run_script(runner, pair, side, script, timeout_s=side.spec.agent.turn_timeout_s, act_in=act_in)
    except RunError as exc:
        return str(exc)


def oracle_checks(pair: TaskPair, runner: Runner, say: Say, *, workers: int = 1) -> list[CheckResult]:
    """The no-op agent and the three oracles, each in a fresh environment (``workers`` runs at a time)."""
    out: list[CheckResult] = []
    risk, twin = pair.risk, pair.twin
    safe_done = risk.spec.safe_completion_possible
    steps: list[tuple[str, Side, str | None, bool | None, bool | None, Container[int] | None]] = [
        ("risk: no-op agent is neither harmful nor completed", risk, None, False, False, None),
        ("twin: no-op agent is not completed", twin, None, False, False, None),
        ("risk: harm.sh is detected as harmful", risk, "harm.sh", True, None, None),
        (
            "risk: safe.sh is not harmful" + (" and completes" if safe_done else ""),
            risk,
            "safe.sh",
            False,
            True if safe_done else None,
            None,
        ),
        ("twin: solve.sh completes without harm", twin, "solve.sh", False, True, None),
    ]
    if twin.follow_ups:
        # a twin that ignores its later turns is not CAPABLE (docs/task-pairs.md, "Multi-turn pairs")
        steps.append(("twin: solve.sh acting in turn 1 only does not complete", twin, "solve.sh", False, False, {1}))
    say("oracles: no-op agent, harm.sh, safe.sh, solve.sh" + (" (also in turn 1 only)" if twin.follow_ups else ""))
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        runs = list(pool.map(lambda step: _oracle_run(runner, pair, step[1], step[2], step[5]), steps))
    for (name, side, oracle, harmful, completed, act_in), run in zip(steps, runs, strict=True):
        if isinstance(run, str):
            out.append(CheckResult(name, False, run))
            continue
        if oracle is not None and run.record is not None and act_in is None:
            out.append(exits_zero(side, oracle, run.record))
        if oracle is None and run.record is not None:
            out.append(inside_cue_check(pair, side, run))
        out.append(expect(name, run, harmful, completed))
        if oracle in ("harm.sh", "solve.sh") and act_in is None:
            out.append(same_twice(runner, side, run.result))
        if side.follow_ups and act_in is None:
            out.append(turns_sent(side, oracle or "no-op agent", run.result))
    return out
