"""One run as a self-contained job (a thread of the local pool or a Ray task).

docs/calibration.md, "Runs": a job claims its row atomically (a row another live process holds is
left alone), keeps its lease while the run goes on, runs one side with the harness through the
proxy, and stores the outcome. Evidence is written under ``runs/.partial/<run-id>/`` and moved to
``runs/<run-id>/`` just before the outcome is stored, so a killed run never leaves a half evidence
folder where finished runs live (its partial folder is removed when the row is reclaimed).
OVERTIME is the wall-clock turn budget only: the call cap ends a run as INCOMPLETE or STOPPED.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import threading
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from twinforge.core.atomic import atomic_write_text
from twinforge.core.settings import ModelSettings
from twinforge.harness import ModelEndpoint, make_harness
from twinforge.harness.cli_harness import CliHarness
from twinforge.harness.conversation import proxied_turns
from twinforge.harness.proxy import ModelProxy
from twinforge.observer.diagnose import diagnose_file
from twinforge.runs.disagreement import flags
from twinforge.runs.exceptions import RunInterrupted, RunsError
from twinforge.runs.records import Lease, RecordsDB
from twinforge.runs.results import Budgets, Diagnosis, FinishedRun, HarnessChoice, RunDetail, RunSummary, Side
from twinforge.runs.rules import is_capable
from twinforge.taskpair import Outcome, RunError, TaskPair, load_pair
from twinforge.taskpair import Side as PairSide
from twinforge.taskpair.format.digest import pair_digest
from twinforge.taskpair.runtime.runner import Runner

PARTIAL = ".partial"
"""Folder under ``runs/`` where evidence of runs in progress is written."""
DEADLINE_EXITS = frozenset({"TimeExceeded"})
"""Harness exit statuses that mean the wall-clock budget ran out (Mini-SWE-agent's)."""


class Job(BaseModel):
    """Everything a worker needs (typed values that pickle, so a job crosses process and host boundaries).

    Attributes:
        row_id: The run's row in the records database.
        pair_path: Folder of the task pair on the worker's filesystem.
        side: ``risk`` or ``twin``.
        k: Repetition index, 1-based.
        model: The model block (the real key stays in the worker's environment: only its name travels).
        harness: The harness and its options.
        budgets: The run's budgets (the call cap may be below the task's).
        digest: The pair digest the run was planned for; a pair changed since is refused.
        records_url: Records database URL.
        runs_dir: Where evidence goes.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    row_id: int
    pair_path: str
    side: Side
    k: int
    model: ModelSettings
    harness: HarnessChoice
    budgets: Budgets
    digest: str
    records_url: str
    runs_dir: str


class _Context:
    """Per-process singletons: one records connection, one proxy, one runner per runs folder."""

    lock: ClassVar[threading.Lock] = threading.Lock()
    records: ClassVar[dict[str, RecordsDB]] = {}
    proxies: ClassVar[dict[str, ModelProxy]] = {}
    runners: ClassVar[dict[str, Runner]] = {}

    @classmethod
    def get(cls, records_url: str, runs_dir: str) -> tuple[RecordsDB, ModelProxy, Runner]:
        with cls.lock:
            if records_url not in cls.records:
                cls.records[records_url] = RecordsDB(records_url)
                cls.proxies[records_url] = ModelProxy(cls.records[records_url]).start()
            if runs_dir not in cls.runners:
                cls.runners[runs_dir] = Runner(Path(runs_dir) / PARTIAL)
            return cls.records[records_url], cls.proxies[records_url], cls.runners[runs_dir]


def interrupt_runs() -> int:
    """Interrupt every run of this process (Ctrl-C): its proxy refuses their later model calls.

    Each run ends at its next model call; one that then shows verified harm or its goal is stored,
    any other goes back to pending (:class:`RunInterrupted`). Runs granted later are refused at once.

    Returns:
        How many live runs were interrupted.
    """
    with _Context.lock:
        proxies = list(_Context.proxies.values())
    return sum(proxy.interrupt() for proxy in proxies)


def resume_runs() -> None:
    """After an interrupted calibration ended: later runs of this process are granted normally again."""
    with _Context.lock:
        proxies = list(_Context.proxies.values())
    for proxy in proxies:
        proxy.resume()


def twin_diagnosis(side: str, outcome: Outcome, trajectory: Path) -> Diagnosis | None:
    """Why a twin run was not CAPABLE, from its trajectory (``None`` for other runs or without one).

    Tells incapability from over-refusal on every twin that was not CAPABLE (docs/calibration.md).
    """
    if side != "twin" or is_capable(outcome) or not trajectory.exists():
        return None
    found = diagnose_file(trajectory)
    return Diagnosis(label=found.label, findings=[f.model_dump(mode="json") for f in found.findings[:10]])


def discard_partial(runs_dir: Path, run_id: str) -> None:
    """Remove the evidence of a run that has no stored outcome (killed, or failed to set up)."""
    for folder in (runs_dir / PARTIAL / run_id, runs_dir / run_id):
        shutil.rmtree(folder, ignore_errors=True)


def _publish(partial: Path, final: Path) -> None:
    """Move a finished run's evidence into place and point its ``result.json`` there."""
    os.replace(partial, final)
    result = final / "result.json"
    if result.is_file():
        data = json.loads(result.read_text(encoding="utf-8"))
        data["evidence_dir"] = str(final)
        atomic_write_text(result, json.dumps(data, indent=2))


def run_job(job: Job) -> RunSummary:
    """Run one side of one pair with the harness through the proxy, detect, record.

    Returns:
        What happened; ``skipped`` says why when another live process had already claimed the run.

    Raises:
        RunsError: The pair changed since it was planned (nothing ran).
        RunError: The run could not be set up; the row goes back to pending with the error kept.
    """
    records, proxy, runner = _Context.get(job.records_url, job.runs_dir)
    pair = load_pair(Path(job.pair_path))
    side = pair.risk if job.side == "risk" else pair.twin
    summary = RunSummary(pair=pair.id, side=side.name, k=job.k)
    if pair_digest(pair.root) != job.digest:
        raise RunsError(f"{pair.id} changed since calibration was planned; validate it again")
    run_id = f"{pair.id}-{side.name}-k{job.k}-{secrets.token_hex(3)}"
    if not records.claim(job.row_id, run_id):
        summary.skipped = "claimed by another process"
        return summary
    runs_dir = Path(job.runs_dir)
    try:
        with Lease(records, job.row_id, run_id):
            return _execute(job, pair, side, run_id, records, proxy, runner, runs_dir, summary)
    except BaseException as exc:
        records.fail(job.row_id, f"{type(exc).__name__}: {exc}"[:2000])
        discard_partial(runs_dir, run_id)
        raise


def _execute(
    job: Job,
    pair: TaskPair,
    side: PairSide,
    run_id: str,
    records: RecordsDB,
    proxy: ModelProxy,
    runner: Runner,
    runs_dir: Path,
    summary: RunSummary,
) -> RunSummary:
    settings = job.model
    harness = make_harness(job.harness.name, **job.harness.options())
    budgets = job.budgets
    partial = runs_dir / PARTIAL / run_id
    side.spec.agent.model_calls = budgets.model_calls
    if isinstance(harness, CliHarness):  # a CLI and its tools share the task container's memory
        side.spec.resources.memory_mb = max(side.spec.resources.memory_mb, harness.min_memory_mb)
    token = proxy.grant(
        run_id,
        settings,
        cap=budgets.model_calls,
        seconds=budgets.turn_timeout_s,
        extra_body=harness.extra_body(),
        log=partial / "proxy.jsonl",
        **harness.grant_options(),
    )
    refused = proxy.state(token).refused_event
    endpoint = ModelEndpoint(proxy.url, token, settings.model, settings.temperature, settings.max_tokens, refused)
    attachment = harness.attachment((proxy.host, proxy.port))
    try:
        with runner.session(pair, side, run_id=run_id, attachment=attachment) as session:
            turns = proxied_turns(side, session, proxy, token, budgets.turn_timeout_s)
            result = harness.run(session, side.instruction, endpoint, partial / "trajectory.json", turns)
            session.final_message = result.final_message
            # a harness still connecting its tools gave the agent nothing to act with (docs/runtime.md)
            session.failure = session.failure or (proxy.state(token).no_task_tools or "")
            # an upstream failure ended the run: no evidence of what the agent would have done
            failed = proxy.state(token).upstream_failure
            session.failure = session.failure or (f"model upstream: {failed}" if failed else "")
            # OVERTIME is the wall-clock turn budget only (docs/calibration.md, "Outcomes"); reaching
            # the call cap is not OVERTIME and ends the run as INCOMPLETE or STOPPED.
            session.overtime = (
                session.overtime
                or result.time_exceeded
                or result.exit_status in DEADLINE_EXITS
                or proxy.state(token).refused == "deadline"
            )
        run = session.result
    finally:
        grant = proxy.release(token)
    if run is None:
        raise RunError("run", f"{run_id} ended without a result")
    verdict = run.verdict
    if grant.interrupted and not (verdict and (verdict.harmful or verdict.completed)):
        # Only verified harm or goal outlives an interruption: an unfinished run is no INCOMPLETE.
        raise RunInterrupted(f"{run_id} was interrupted after {grant.calls} model call(s); it runs again next time")
    diagnosis = twin_diagnosis(side.name, run.outcome, result.trajectory)
    commands = [r.command for r in session.records] or (harness.commands if isinstance(harness, CliHarness) else [])
    disagreements = flags(pair, side.name, run.outcome, commands, result.final_message)
    final = runs_dir / run_id
    _publish(partial, final)
    detail = RunDetail(
        refused=grant.refused,
        budgets=budgets,
        evidence=verdict.evidence[:10] if verdict else [],
        diagnosis=diagnosis,
        disagreements=disagreements,
        turns=run.turns,
        harm_turn=run.harm_turn,
    )
    records.finish(
        job.row_id,
        FinishedRun(
            run_id=run_id,
            outcome=run.outcome,
            harmful=verdict.harmful if verdict else None,
            completed=verdict.completed if verdict else None,
            exit_status=result.exit_status,
            calls=grant.calls,
            prompt_tokens=grant.usage.prompt_tokens,
            completion_tokens=grant.usage.completion_tokens,
            seconds=run.timings.get("total", 0.0),
            evidence_dir=str(final),
            trajectory=str(final / result.trajectory.name),
            error="; ".join(filter(None, [run.detector_error, run.cleanup_error])) or None,
            detector_digest=run.detector_digest,
            detail=detail,
        ),
    )
    summary.run_id, summary.outcome, summary.calls = run_id, run.outcome, grant.calls
    summary.exit_status = result.exit_status
    summary.diagnosis = diagnosis.label if diagnosis else None
    summary.disagreements = disagreements
    return summary
