"""``implement``: blueprints -> task pairs that pass the whole gate, one workspace commit per blueprint.

Each blueprint ends ``implemented`` (its pair in ``tasks/<pair-id>/``) or ``impl_failed`` (the last
gate report with the failing checks named, in ``implementation/<blueprint-id>.yaml``). Working files
(trajectories, gate reports, proxy transcripts, the staged pair) stay under
``runs/implement/<blueprint-id>/``. A killed run continues where it stopped: finished blueprints
have a new status and are not taken again (docs/implementer.md).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import yaml

from twinforge.blueprints import BlueprintRecord, BlueprintStore, Commit, LifecycleMove, Status
from twinforge.core.exceptions import WorkspaceError
from twinforge.core.llm import ChatModel, Usage, make_chat_model
from twinforge.core.settings import ImplementerSettings
from twinforge.core.workspace import Workspace
from twinforge.implementer.claim import claim
from twinforge.implementer.job import Attempt, Gate, Job
from twinforge.implementer.record import ImplementRecord, Mode, outcomes
from twinforge.implementer.select import RETRYABLE, pair_id_for, select
from twinforge.taskpair.gate.recording import without_validation
from twinforge.taskpair.gate.validate import PairReport, validate
from twinforge.taskpair.runtime.runner import Runner

RECORDS_DIR = "implementation"


@dataclass
class BlueprintOutcome:
    """One blueprint's result, as ``implement --json`` prints it."""

    blueprint_id: str
    pair_id: str
    outcome: str
    reason: str
    mode: str
    provenance: str
    rounds: int
    calls: int
    tokens: int
    seconds: float
    failed_checks: list[str] = field(default_factory=list)
    interventions: int = 0
    recovered: int = 0
    commit: str = ""


@dataclass
class ImplementReport:
    """Every blueprint ``implement`` finished in this call."""

    outcomes: list[BlueprintOutcome] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Blueprints another process was working on, or finished meanwhile (one line each)."""

    @property
    def implemented(self) -> list[BlueprintOutcome]:
        """Those that passed the whole gate."""
        return [o for o in self.outcomes if o.outcome == "implemented"]


def docker_gate(runner: Runner, say: Callable[[str], None] | None = None) -> Gate:
    """The whole gate (static, then dynamic in Docker) on a pair folder."""

    def gate(path: Path) -> PairReport:
        progress = None if say is None else (lambda _pair, step: say(step))
        (report,) = validate([path], runner, progress)
        return report

    return gate


def tracked_pairs(workspace: Workspace) -> set[str]:
    """Pair folder names under ``tasks/`` that git tracks (a committed pair is finished)."""
    files = workspace.repo.git.ls_files("--", "tasks").splitlines()
    return {Path(f).parts[1] for f in files if len(Path(f).parts) > 2}


def _record(job: Job, attempt: Attempt, mode: Mode, started: datetime, seconds: float) -> ImplementRecord:
    rounds = attempt.rounds
    return ImplementRecord(
        blueprint_id=job.blueprint_id,
        pair_id=job.pair_id,
        mode=mode,
        outcome="implemented" if attempt.passed else "impl_failed",
        reason=attempt.reason,
        provenance=attempt.provenance,
        model=attempt.model,
        prompt_version=attempt.prompt_version,
        rounds=rounds,
        gate=outcomes(attempt.gate),
        failed_checks=[c.name for c in attempt.gate if not c.passed],
        findings=attempt.findings,
        usage=Usage.total(r.usage for r in rounds),
        seconds=round(seconds, 2),
        interventions=sum(r.interventions for r in rounds),
        recovered=sum(r.recovered for r in rounds),
        shadowed=sum(r.shadowed for r in rounds),
        observed=attempt.observed,
        started_at=started,
        finished_at=datetime.now(UTC).replace(microsecond=0),
    )


def finish(workspace: Workspace, job: Job, attempt: Attempt, record: ImplementRecord) -> str:
    """Write the outcome and commit it: blueprint status, implement record and (when it passed) the pair.

    Returns:
        The commit's sha.
    """
    store = BlueprintStore(workspace)
    with workspace.locked():
        store.load(job.blueprint_id)  # a blueprint deleted meanwhile stops here, before the pair is copied
        paths = []
        if attempt.passed:
            target = workspace.tasks_dir / job.pair_id
            if target.exists():  # an interrupted earlier copy, never committed (select() skips tracked pairs)
                shutil.rmtree(target)
            shutil.copytree(job.committed_source(), target, symlinks=True)
            spec = target / "pair.yaml"  # a validation record is the gate's to write (docs/calibration.md)
            if spec.is_file() and not spec.is_symlink():
                spec.write_text(without_validation(spec.read_text(encoding="utf-8")), encoding="utf-8")
            paths += [str(p.relative_to(workspace.root)) for p in sorted(target.rglob("*")) if p.is_file()]
        rel = f"{RECORDS_DIR}/{job.blueprint_id}.yaml"
        workspace.write(rel, yaml.safe_dump(record.model_dump(mode="json"), sort_keys=False, width=100))
        rounds = len(record.rounds)
        head = f"implement: {job.blueprint_id} -> {record.outcome} ({attempt.provenance}, {rounds} round(s))"
        moved = store.apply(
            LifecycleMove(
                job.blueprint_id,
                Status.IMPLEMENTED if attempt.passed else Status.IMPL_FAILED,
                action="implement",
                by=f"implementer:{attempt.model}",
                commit=Commit(f"{head}\n\n{record.reason}"),
                reason=record.reason[:500],
                files=(*paths, rel),
            )
        )
        if moved.commit is None:
            raise WorkspaceError(f"implement: {job.blueprint_id}: nothing was committed")
        return moved.commit


def implement(
    workspace: Workspace,
    ids: list[str] | None = None,
    *,
    ready: bool = False,
    mode: Mode | None = None,
    rounds: int | None = None,
    intervene: bool | None = None,
    gate: Gate | None = None,
    chat: ChatModel | None = None,
    limit: int | None = None,
    workers: int | None = None,
    exclude_references: frozenset[str] = frozenset(),
    say: Callable[[str, str], None] | None = None,
    on_done: Callable[[BlueprintOutcome], None] | None = None,
) -> ImplementReport:
    """Implement blueprints, several at once (the library function behind ``twinforge implement``).

    Args:
        workspace: The workspace.
        ids: Blueprint ids (kept, approved or impl_failed).
        ready: Also take every kept or approved blueprint without a pair.
        mode: ``archetype`` or ``agent`` (default ``[implementer] mode``).
        rounds: Gate rounds per blueprint (default ``[implementer] rounds``).
        intervene: Let the observer intervene in agent mode (default ``[implementer] observe``).
        gate: The whole gate (default: the real one, Docker through a :class:`Runner` on ``runs/``).
        chat: Archetype mode's model (default: ``[models.implementer]``).
        limit: At most this many blueprints (named ones first, then the best-reviewed ready ones).
        workers: Blueprints implemented at once (default: the implementer role's concurrency; for
            the embedded server its slot count, docs/design.md "The embedded model server").
        exclude_references: Reference pairs hidden from the implementer.
        say: ``(blueprint id, step)`` progress messages.
        on_done: Called with each blueprint's outcome right after its commit.

    Returns:
        One outcome per blueprint finished in this call, in the order they finished.

    Raises:
        ImplementerError: Nothing to implement as asked (see :func:`~twinforge.implementer.select.select`).
        RepositoryStateError: The workspace's repository cannot take commits (rebase, detached HEAD, ...).
    """
    config = workspace.config
    settings: ImplementerSettings = config.implementer
    chosen_mode: Mode = mode or settings.mode
    workspace.check_ready()  # before any model call: a commit per blueprint must be possible
    store = BlueprintStore(workspace)
    todo = select(store, ids, ready, tracked_pairs(workspace), limit)
    report = ImplementReport()
    if not todo:
        return report
    notify = say or (lambda _bp, _step: None)
    runs = workspace.root / "runs" / "implement"
    the_gate = gate
    if the_gate is None:
        the_gate = docker_gate(Runner(workspace.root / "runs"))

    def one(listed: BlueprintRecord) -> BlueprintOutcome | str:
        with claim(runs, listed.id) as held_by:  # another process may hold it, or have finished it
            record = _still_to_do(store, listed.id, held_by, workspace)
            if isinstance(record, str):
                notify(listed.id, record)
                return record
            return build(record)

    def build(record: BlueprintRecord) -> BlueprintOutcome:
        started_at = datetime.now(UTC).replace(microsecond=0)
        started = time.monotonic()
        job = Job(
            record=record,
            pair_id=pair_id_for(record.id),
            run_dir=runs / record.id,
            workspace_root=workspace.root,
            settings=settings,
            model=config.with_api_shapes(config.models.implementer),
            gate=the_gate,
            taxonomy=store.taxonomy,
            say=partial(notify, record.id),
            rounds=rounds or settings.rounds,
            intervene=settings.observe if intervene is None else intervene,
            observer=config.observer,
            observer_model=config.models.observer,
            exclude_references=exclude_references,
            deadline=started + settings.wall_s,
        )
        job.run_dir.mkdir(parents=True, exist_ok=True)
        attempt = _run_mode(chosen_mode, job, chat)
        implement_record = _record(job, attempt, chosen_mode, started_at, time.monotonic() - started)
        sha = finish(workspace, job, attempt, implement_record)  # commits one at a time (workspace lock)
        return BlueprintOutcome(
            blueprint_id=record.id,
            pair_id=job.pair_id,
            outcome=implement_record.outcome,
            reason=implement_record.reason,
            mode=chosen_mode,
            provenance=attempt.provenance,
            rounds=len(implement_record.rounds),
            calls=implement_record.usage.calls,
            tokens=implement_record.usage.tokens,
            seconds=implement_record.seconds,
            failed_checks=implement_record.failed_checks,
            interventions=implement_record.interventions,
            recovered=implement_record.recovered,
            commit=sha,
        )

    # Blueprints are implemented side by side (each its own job, run folder and pair id); the first
    # error stops new ones from starting and is raised once those in flight have finished.
    pool = ThreadPoolExecutor(max_workers=max(1, workers or config.concurrency(config.models.implementer)))
    futures = [pool.submit(one, record) for record in todo]
    try:
        for future in as_completed(futures):
            outcome = future.result()
            if isinstance(outcome, str):
                report.skipped.append(outcome)
                continue
            report.outcomes.append(outcome)
            if on_done is not None:
                on_done(outcome)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return report


def _still_to_do(
    store: BlueprintStore, blueprint_id: str, held_by: str | None, workspace: Workspace
) -> BlueprintRecord | str:
    """The blueprint as it is now, when this process holds its claim and it still needs a pair; else why not."""
    if held_by is not None:
        return held_by
    record = store.load(blueprint_id)  # another process may have finished it before we got the claim
    if record.status not in RETRYABLE or pair_id_for(record.id) in tracked_pairs(workspace):
        return f"{blueprint_id} is {record.status.value} now (implemented meanwhile); skipped"
    return record


def _run_mode(mode: Mode, job: Job, chat: ChatModel | None) -> Attempt:
    if mode == "agent":
        from twinforge.implementer.agent.mode import run_agent

        return run_agent(job)
    from twinforge.implementer.archetypes.mode import run_archetype

    return run_archetype(job, chat or make_chat_model(job.model, role="implementer"))
