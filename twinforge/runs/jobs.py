"""One run as a self-contained job (a thread of the local pool or a Ray task).

docs/calibration.md, "Runs": a job claims its row atomically (a row another live process holds is
left alone), keeps its lease while the run goes on, runs one side with the harness through the
proxy, and stores the outcome. Evidence is written under ``runs/.partial/<run-id>/`` and moved to
``runs/<run-id>/`` just before the outcome is stored, so a killed run never leaves a half evidence
folder where finished runs live (its partial folder is removed when the row is reclaimed).
The facts the outcome rests on (OVERTIME, a run the model never answered, an interrupt) are decided
by :mod:`twinforge.runs.rules`; the side is copied with the run's budgets, the loaded pair stays as
it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from docker.errors import DockerException
from pydantic import BaseModel, ConfigDict

from twinforge.core.atomic import atomic_write_text
from twinforge.core.settings import ModelSettings
from twinforge.core.spend import SpendMeter
from twinforge.harness import ModelEndpoint, make_harness
from twinforge.harness.cli_harness import CliHarness
from twinforge.harness.conversation import proxied_turns
from twinforge.harness.grant import RunGrant
from twinforge.harness.install import PACKAGES
from twinforge.harness.layer import layer_tag
from twinforge.harness.protocol import Harness, HarnessResult
from twinforge.harness.proxy import ModelProxy
from twinforge.observer.diagnose import diagnose_twin
from twinforge.observer.exceptions import TrajectoryError
from twinforge.runs.budgets import Budgets
from twinforge.runs.disagreement import flags
from twinforge.runs.exceptions import RunInterrupted, RunsError
from twinforge.runs.records import Lease, RecordsDB
from twinforge.runs.results import Diagnosis, FinishedRun, HarnessChoice, RunDetail, RunSummary, Side
from twinforge.runs.rules import CallStatus, is_capable, is_overtime, kept_after_interrupt, run_failure
from twinforge.taskpair import Outcome, RunError, TaskPair, load_pair
from twinforge.taskpair import Side as PairSide
from twinforge.taskpair.format.digest import detector_digest, pair_digest
from twinforge.taskpair.runtime.canaries import RunCanaries
from twinforge.taskpair.runtime.engine import client
from twinforge.taskpair.runtime.images import image_tag
from twinforge.taskpair.runtime.runner import Runner
from twinforge.taskpair.runtime.session import RunResult, Session

PARTIAL = ".partial"
"""Folder under ``runs/`` where evidence of runs in progress is written."""
NO_CALL_CAP = 1_000_000
"""The proxy's agent-turn cap for a harness without a call cap (every CLI: the turn budget alone ends it)."""


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
        fresh_canaries: Give the run its own canary values (docs/runtime.md, "Canaries per run").
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
    fresh_canaries: bool = True


class _Context:
    """Per-process singletons: one records connection, one proxy, one runner per runs folder."""

    lock: ClassVar[threading.Lock] = threading.Lock()
    records: ClassVar[dict[str, RecordsDB]] = {}
    proxies: ClassVar[dict[str, ModelProxy]] = {}
    runners: ClassVar[dict[str, Runner]] = {}
    spend: ClassVar[SpendMeter | None] = None

    @classmethod
    def get(cls, records_url: str, runs_dir: str) -> tuple[RecordsDB, ModelProxy, Runner]:
        with cls.lock:
            if records_url not in cls.records:
                cls.records[records_url] = RecordsDB(records_url)
                cls.proxies[records_url] = ModelProxy(cls.records[records_url], spend=cls.spend).start()
            if runs_dir not in cls.runners:
                cls.runners[runs_dir] = Runner(Path(runs_dir) / PARTIAL)
            return cls.records[records_url], cls.proxies[records_url], cls.runners[runs_dir]


def use_spend(meter: SpendMeter | None) -> None:
    """Count the cost of this process's model calls on ``meter`` (one command's; ``None``: stop counting).

    Every proxy of the process, and any started later, adds each priced call's cost to it as the
    call is recorded, so the executor's :meth:`~twinforge.core.spend.SpendMeter.allows_new_run`
    sees the spend of runs still going (docs/runtime.md, "Spend ceiling").
    """
    with _Context.lock:
        _Context.spend = meter
        for proxy in _Context.proxies.values():
            proxy.spend = meter


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


def twin_diagnosis(
    side: str,
    outcome: Outcome,
    trajectory: Path,
    *,
    completed: bool | None = None,
    refused: str | None = None,
    error: str = "",
) -> Diagnosis | None:
    """Why a twin run was not CAPABLE, from its trajectory (``None`` for other runs or without one).

    Tells incapability from over-refusal on every twin that was not CAPABLE (docs/calibration.md):
    the observer's label and findings, and the twin's cause (docs/observer.md, "Why a twin was not CAPABLE").

    Args:
        side: ``risk`` or ``twin``.
        outcome: The stored outcome.
        trajectory: The run's trajectory file or evidence folder.
        completed: The detector's ``completed``.
        refused: Why the proxy refused calls (``cap``, ``deadline``), if it did.
        error: The detector's or the run's error.
    """
    if side != "twin" or is_capable(outcome) or not trajectory.exists():
        return None
    found = diagnose_twin(
        trajectory,
        outcome.value,
        completed=completed,
        proxy_refusals=(refused,) if refused else (),
        run_error=error,
    )
    cause = found.cause
    return Diagnosis(
        label=found.label,
        findings=[f.model_dump(mode="json") for f in found.findings[:10]],
        cause=cause.cause if cause else None,
        cause_evidence=cause.evidence if cause else "",
        cause_steps=list(cause.steps) if cause else [],
    )


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
    loaded = pair.risk if job.side == "risk" else pair.twin
    summary = RunSummary(pair=pair.id, side=loaded.name, k=job.k)
    if pair_digest(pair.root) != job.digest:
        raise RunsError(f"{pair.id} changed since calibration was planned; validate it again")
    run_id = f"{pair.id}-{loaded.name}-k{job.k}-{secrets.token_hex(3)}"
    if not records.claim(job.row_id, run_id):
        summary.skipped = "claimed by another process"
        return summary
    harness = make_harness(job.harness.name, **job.harness.options())
    run = _Run(job, pair, loaded, side_for_run(loaded, job.budgets, harness), run_id, records, proxy, runner, summary)
    try:
        with Lease(records, job.row_id, run_id):
            if job.fresh_canaries:
                run.fresh_canaries()
            return _execute(run, harness)
    except BaseException as exc:
        records.fail(job.row_id, f"{type(exc).__name__}: {exc}"[:2000])
        discard_partial(run.runs_dir, run_id)
        raise
    finally:
        run.clean_up()


def side_for_run(side: PairSide, budgets: Budgets, harness: Harness) -> PairSide:
    """The side as this run sees it: its call cap and, for a CLI, enough memory; the loaded spec stays as it is.

    A CLI and its tools share the task container's memory (docs/runtime.md, "Harnesses"), so its
    limit is at least the CLI's :attr:`~twinforge.harness.cli_harness.CliHarness.min_memory_mb`.
    """
    agent = side.spec.agent
    if budgets.model_calls is not None:
        agent = agent.model_copy(update={"model_calls": budgets.model_calls})
    resources = side.spec.resources
    if isinstance(harness, CliHarness):
        resources = resources.model_copy(update={"memory_mb": max(resources.memory_mb, harness.min_memory_mb)})
    return PairSide(side.root, side.spec.model_copy(update={"agent": agent, "resources": resources}), side.follow_ups)


@dataclass
class _Run:
    """One run in progress: what its steps share.

    Attributes:
        declared: The pair's side as loaded (its detector digest is the run's).
        side: The side as this run sees it (its budgets; with fresh canaries, a copy of the folder).
        canaries: The run's canary values (``None``: the side declares none).
        image: The image the run's task container used (a harness layer for a CLI).
    """

    job: Job
    pair: TaskPair
    declared: PairSide
    side: PairSide
    run_id: str
    records: RecordsDB
    proxy: ModelProxy
    runner: Runner
    summary: RunSummary
    canaries: RunCanaries | None = None
    image: str = ""

    @property
    def runs_dir(self) -> Path:
        return Path(self.job.runs_dir)

    @property
    def partial(self) -> Path:
        return self.runs_dir / PARTIAL / self.run_id

    @property
    def copy_dir(self) -> Path:
        """Where a side with the run's canary values is copied (never inside the evidence)."""
        return self.runs_dir / PARTIAL / f"{self.run_id}.side"

    def fresh_canaries(self) -> None:
        """Draw the run's canary values and use a copy of the side that carries them (docs/runtime.md)."""
        canaries = RunCanaries.fresh(self.declared)
        if canaries.values:
            self.canaries = canaries
        if canaries.fresh_any:
            self.side = canaries.materialize(self.side, self.copy_dir)

    def clean_up(self) -> None:
        """Remove the side's copy and the images built from it (each is this run's alone)."""
        if not self.copy_dir.exists():
            return
        task = image_tag(self.pair.id, self.side, self.runner.base)
        shutil.rmtree(self.copy_dir, ignore_errors=True)
        with contextlib.suppress(DockerException, RunError):
            engine = client()
            layers = [self.image] if self.image and self.image != task else []
            spec = self.job.harness.spec
            if not layers and spec.name in PACKAGES:  # a run that ended early: its layer, if it was built
                with contextlib.suppress(DockerException):
                    layers.append(layer_tag(str(engine.images.get(task).id), PACKAGES[spec.name], spec.version))
            for image in [*layers, task]:  # the layer first: an image with a child cannot be removed
                with contextlib.suppress(DockerException):
                    engine.images.remove(image, noprune=False)


def _execute(run: _Run, harness: Harness) -> RunSummary:
    """Grant the user turn, run the harness in a session, set the run's facts by the rules, store the outcome."""
    token = _grant_turn(run, harness)
    state = run.proxy.state(token)
    endpoint = ModelEndpoint(
        run.proxy.url,
        token,
        run.job.model.model,
        run.job.model.temperature,
        run.job.model.max_tokens,
        state.refused_event,
    )
    attachment = harness.attachment((run.proxy.host, run.proxy.port))
    try:
        with run.runner.session(run.pair, run.side, run_id=run.run_id, attachment=attachment) as session:
            turns = proxied_turns(run.side, session, run.proxy, token, run.job.budgets.turn_seconds())
            result = harness.run(session, run.side.instruction, endpoint, run.partial / "trajectory.json", turns)
            _set_facts(run, session, result, state)
        stored = session.result
    finally:
        grant = run.proxy.release(token)
    if stored is None:
        raise RunError("run", f"{run.run_id} ended without a result")
    run.image = stored.image
    verdict = stored.verdict
    if grant.interrupted and not kept_after_interrupt(
        harmful=verdict.harmful if verdict else None, completed=verdict.completed if verdict else None
    ):
        raise RunInterrupted(f"{run.run_id} was interrupted after {grant.calls} model call(s); it runs again next time")
    commands = [r.command for r in session.records] or (harness.commands if isinstance(harness, CliHarness) else [])
    return _store(run, stored, result, grant, commands, session.failure)


def _grant_turn(run: _Run, harness: Harness) -> str:
    """The proxy's token for the run's user turn: its call cap (Mini-SWE-agent only) and the turn's deadline.

    The wall-clock budget of a user turn starts here (:meth:`twinforge.runs.budgets.Budgets.turn_seconds`,
    docs/calibration.md, "Budgets").
    """
    budgets = run.job.budgets
    return run.proxy.grant(
        run.run_id,
        run.job.model,
        cap=NO_CALL_CAP if budgets.model_calls is None else budgets.model_calls,
        seconds=budgets.turn_seconds(),
        extra_body=harness.extra_body(),
        log=run.partial / "proxy.jsonl",
        **harness.grant_options(),
    )


def _set_facts(run: _Run, session: Session, result: HarnessResult, state: RunGrant) -> None:
    """What the runner needs to decide the outcome, decided by :mod:`twinforge.runs.rules`."""
    session.final_message = result.final_message
    overtime = is_overtime(
        session_overtime=session.overtime,
        time_exceeded=result.time_exceeded,
        exit_status=result.exit_status,
        refused=state.refused,
    )
    failure = run_failure(
        calls=_call_statuses(run.records, run.run_id, state),
        upstream_failure=state.upstream_failure,
        no_task_tools=state.no_task_tools,
        overtime=overtime,
    )
    session.failure = session.failure or failure
    session.overtime = overtime


def _call_statuses(records: RecordsDB, run_id: str, state: RunGrant) -> list[CallStatus] | None:
    """The run's model calls as the proxy recorded them (``None`` when some could not be recorded)."""
    if state.record_errors:
        return None
    return [CallStatus(c.status, c.refused, c.error, c.role) for c in records.calls(run_id)]


def _store(
    run: _Run, stored: RunResult, result: HarnessResult, grant: RunGrant, commands: list[str], failure: str
) -> RunSummary:
    """Publish the evidence and store the finished run; returns the summary."""
    verdict = stored.verdict
    if run.canaries is not None:
        run.canaries.write(run.partial)
    try:  # the evidence folder: the trajectory of any of the five harnesses (docs/observer.md)
        diagnosis = twin_diagnosis(
            run.side.name,
            stored.outcome,
            run.partial if run.partial.is_dir() else result.trajectory,
            completed=verdict.completed if verdict else None,
            refused=grant.refused,
            error=stored.detector_error or "",
        )
    except TrajectoryError:  # an unreadable trajectory leaves the run undiagnosed, never unstored
        diagnosis = None
    disagreements = flags(run.pair, run.side.name, stored.outcome, commands, result.final_message)
    final = run.runs_dir / run.run_id
    _publish(run.partial, final)
    detail = RunDetail(
        refused=grant.refused,
        budgets=run.job.budgets,
        harness=run.job.harness.spec,
        failure=failure or None,
        evidence=verdict.evidence[:10] if verdict else [],
        diagnosis=diagnosis,
        disagreements=disagreements,
        turns=stored.turns,
        harm_turn=stored.harm_turn,
        model_use=grant.summary(),
    )
    run.records.finish(
        run.job.row_id,
        FinishedRun(
            run_id=run.run_id,
            outcome=stored.outcome,
            harmful=verdict.harmful if verdict else None,
            completed=verdict.completed if verdict else None,
            exit_status=result.exit_status,
            calls=grant.calls,
            prompt_tokens=grant.usage.prompt_tokens,
            completion_tokens=grant.usage.completion_tokens,
            seconds=stored.timings.get("total", 0.0),
            evidence_dir=str(final),
            trajectory=str(final / result.trajectory.name),
            error="; ".join(filter(None, [stored.detector_error, stored.cleanup_error])) or None,
            detector_digest=detector_digest(run.declared.root),  # the pair's detector, not the run's copy
            detail=detail,
        ),
    )
    summary = run.summary
    summary.run_id, summary.outcome, summary.calls = run.run_id, stored.outcome, grant.calls
    summary.exit_status = result.exit_status
    summary.cost_usd = detail.model_use.cost_usd if detail.model_use else None
    summary.diagnosis = diagnosis.label if diagnosis else None
    summary.disagreements = disagreements
    return summary
