"""Re-judging stored runs with the current detector (docs/calibration.md, "Re-judging stored runs").

When a detector and a trajectory disagree, the state measurement is fixed, never the trajectory:
a fixed detector judges the evidence the runs already collected (``runs/<run-id>/``: the state,
the baseline, the service logs and the agent's final message) instead of throwing the runs away.
Runs are keyed by the pair's environment digest (everything but the detectors), so editing only a
detector keeps them; each verdict records the digest of the detector that gave it, and the new
verdict is stored beside the old ones (:meth:`twinforge.runs.records.RecordsDB.rejudge`).

The detector runs exactly as after a run (docs/runtime.md, "Detector runtime"): in a fresh
container without network over the evidence mounted read-only, agent code only in a sandbox of
the task image (rebuilt from the unchanged environment when it is gone). The outcome follows the
same mapping, with the run's own OVERTIME and memory-kill facts from its ``result.json``.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

from docker.errors import DockerException
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from twinforge.core.workspace import Workspace
from twinforge.observer import TrajectoryError
from twinforge.runs.disagreement import flags
from twinforge.runs.exceptions import RunsError
from twinforge.runs.jobs import twin_diagnosis
from twinforge.runs.records import RecordsDB, RunRow, records_url
from twinforge.runs.results import FinishedRun, RunDetail
from twinforge.taskpair import Outcome, RunError, TaskPair, load_pair, outcome_of
from twinforge.taskpair.format.digest import detector_digest, environment_digest
from twinforge.taskpair.runtime.canaries import RunCanaries
from twinforge.taskpair.runtime.images import build_image
from twinforge.taskpair.runtime.runner import Runner
from twinforge.taskpair.runtime.scripted import SCRIPTED
from twinforge.taskpair.runtime.session import CommandRecord, RunResult


class Rejudged(BaseModel):
    """One stored run and what re-judging it did.

    Attributes:
        run_id: The run.
        side: ``risk`` or ``twin``.
        k: Its repetition.
        purpose: ``calibration`` or ``evaluation``.
        model: ``provider:model``.
        before: Its outcome before.
        after: Its outcome now (``None`` when it was not judged again).
        skipped: Why it was not judged again.
        error: Why the detector gave no verdict (the run is UNDETERMINED then).
    """

    model_config = ConfigDict(extra="forbid")

    run_id: str
    side: str
    k: int
    purpose: str
    model: str
    before: Outcome | None
    after: Outcome | None = None
    skipped: str | None = None
    error: str | None = None

    @property
    def changed(self) -> bool:
        """The outcome changed."""
        return self.after is not None and self.after != self.before


class RedetectReport(BaseModel):
    """What ``twinforge redetect PAIR`` did.

    Attributes:
        pair: Pair id.
        environment: The pair's environment digest (the runs judged were made on it).
        detectors: The current detector digest per side.
        runs: One entry per stored run considered.
        other_versions: Runs of the pair made on another environment (left alone: their state
            belongs to another version of the pair).
    """

    model_config = ConfigDict(extra="forbid")

    pair: str
    environment: str
    detectors: dict[str, str]
    runs: list[Rejudged] = Field(default_factory=list)
    other_versions: int = 0

    @property
    def changed(self) -> int:
        """Runs whose outcome changed."""
        return sum(r.changed for r in self.runs)


def _commands(evidence: Path) -> list[str]:
    path = evidence / "agent" / "commands.jsonl"
    if not path.is_file():
        return []
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            found.append(CommandRecord.model_validate_json(line).command)
        except ValidationError:
            continue
    return found


def _final_message(evidence: Path) -> str:
    path = evidence / "agent" / "final_message.txt"
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def _judge(runner: Runner, pair: TaskPair, row: RunRow, evidence: Path, digest: str) -> tuple[FinishedRun, str | None]:
    """The current detector's verdict on one stored run, as the run's new stored result."""
    side = pair.risk if row.side == "risk" else pair.twin
    stored = RunResult.model_validate(json.loads((evidence / "result.json").read_text(encoding="utf-8")))
    finished = row.finished()
    old = finished.detail if finished else None
    with tempfile.TemporaryDirectory(prefix="redetect-side-") as copy:
        canaries = RunCanaries.read(evidence)
        # the run's own canary values: its evidence carries them, so the detector looks for them
        judged = canaries.materialize(side, Path(copy)) if canaries and canaries.fresh_any else side
        image, _ = build_image(runner.cli, pair.id, judged, runner.base)  # same tag while the environment is unchanged
        tag = f"redetect-{digest[:12]}"
        verdict, error = runner.detect(judged, evidence, run_id=stored.run_id, tag=tag, image=image)
        if judged is not side:
            with contextlib.suppress(DockerException):
                runner.cli.images.remove(image)
    failure = old.failure if old is not None else None  # the run showed nothing about the agent
    outcome = outcome_of(
        verdict,
        overtime=stored.overtime,
        safe_completion_possible=side.spec.safe_completion_possible,
        failed=stored.oom_killed or bool(failure),
    )
    if stored.oom_killed and outcome is Outcome.UNDETERMINED:
        cause = f"oom: the task container hit its memory limit ({side.spec.resources.memory_mb} MiB)"
        error = f"{error}; {cause}" if error else cause
    if failure and outcome is Outcome.UNDETERMINED:
        error = f"{error}; {failure}" if error else failure
    detail = None
    if old is not None:
        trajectory = Path(row.trajectory) if row.trajectory else evidence / "trajectory.json"
        try:
            diagnosis = twin_diagnosis(
                side.name,
                outcome,
                trajectory,
                completed=verdict.completed if verdict else None,
                refused=old.refused,
                error=error or "",
            )
        except TrajectoryError:
            diagnosis = old.diagnosis
        detail = RunDetail(
            refused=old.refused,
            budgets=old.budgets,
            harness=old.harness,
            failure=old.failure,
            evidence=verdict.evidence[:10] if verdict else [],
            diagnosis=diagnosis,
            disagreements=flags(pair, side.name, outcome, _commands(evidence), _final_message(evidence)),
        )
    return (
        FinishedRun(
            run_id=row.run_id or "",
            outcome=outcome,
            harmful=verdict.harmful if verdict else None,
            completed=verdict.completed if verdict else None,
            exit_status=row.exit_status or "",
            calls=row.calls or 0,
            prompt_tokens=row.prompt_tokens or 0,
            completion_tokens=row.completion_tokens or 0,
            seconds=row.seconds or 0.0,
            evidence_dir=row.evidence_dir,
            trajectory=row.trajectory,
            error=error,
            detector_digest=digest,
            detail=detail,
        ),
        error,
    )


def stale(rows: list[RunRow], pair: TaskPair) -> list[RunRow]:
    """Done runs of ``pair`` on its current environment whose verdict came from another detector."""
    environment = environment_digest(pair.root)
    current = {side.name: detector_digest(side.root) for side in pair.sides()}
    return [
        r
        for r in rows
        if r.pair == pair.id
        and r.status == "done"
        and r.digest == environment
        and r.detector_digest != current.get(r.side)
    ]


def redetect(
    records: RecordsDB,
    runs_dir: Path,
    pair: TaskPair,
    *,
    run_ids: list[str] | None = None,
    only_stale: bool = True,
    runner: Runner | None = None,
    on_done: Callable[[Rejudged], None] | None = None,
) -> RedetectReport:
    """Judge the stored evidence of a pair's past runs with its current detectors and store the new verdicts.

    Args:
        records: The records database.
        runs_dir: ``<workspace>/runs`` (evidence under ``runs/<run-id>/``).
        pair: The pair, as it is now.
        run_ids: Only these runs (default: every run of the pair on its current environment).
        only_stale: Skip runs the current detector already judged.
        runner: The runner whose detector runtime is used (default: one on the local engine).
        on_done: Called per run considered.

    Returns:
        Per run: the outcome before and after, or why it was skipped.

    Raises:
        RunError: The base image is missing or the engine cannot be reached.
    """
    environment = environment_digest(pair.root)
    current = {side.name: detector_digest(side.root) for side in pair.sides()}
    report = RedetectReport(pair=pair.id, environment=environment, detectors=current)
    rows = [
        r for r in records.runs(pairs=[pair.id]) if r.purpose != SCRIPTED and (run_ids is None or r.run_id in run_ids)
    ]
    report.other_versions = sum(r.digest != environment for r in rows)
    for row in rows:
        if row.digest != environment:
            continue
        entry = Rejudged(
            run_id=row.run_id or str(row.id),
            side=row.side,
            k=row.k,
            purpose=row.purpose,
            model=row.model,
            before=Outcome(row.outcome) if row.outcome else None,
        )
        evidence = runs_dir / (row.run_id or "")
        if only_stale and row.detector_digest == current[row.side]:
            entry.skipped = "already judged by the current detector"
        elif not row.run_id or evidence.resolve().parent != runs_dir.resolve():
            entry.skipped = f"run id {row.run_id!r} names no folder under {runs_dir}"
        elif not (evidence / "result.json").is_file():
            entry.skipped = f"no stored evidence at {evidence}"
        else:
            runner = runner or Runner(runs_dir)
            try:
                finished, entry.error = _judge(runner, pair, row, evidence, current[row.side])
            except (RunError, ValidationError, ValueError, OSError) as exc:
                entry.skipped = f"could not judge again: {exc}"
            else:
                records.rejudge(row.id, finished)
                entry.after = finished.outcome
        report.runs.append(entry)
        if on_done:
            on_done(entry)
    return report


def rejudge_stale(
    records: RecordsDB,
    runs_dir: Path,
    pairs: list[TaskPair],
    keep: Callable[[RunRow], bool],
    on_done: Callable[[Rejudged], None] | None = None,
) -> list[RedetectReport]:
    """Before calibrate or evaluate decide: re-judge their stored runs that an older detector judged.

    Args:
        records: The records database.
        runs_dir: ``<workspace>/runs``.
        pairs: The pairs of the campaign.
        keep: Which runs belong to the campaign (its purpose, model, harness, budgets).
        on_done: Called per run judged again.

    Returns:
        One report per pair that had such runs.
    """
    reports = []
    rows = records.runs(pairs=[p.id for p in pairs])
    runner: Runner | None = None
    for pair in pairs:
        found = [r.run_id for r in stale(rows, pair) if keep(r) and r.run_id]
        if found:
            runner = runner or Runner(runs_dir)
            reports.append(redetect(records, runs_dir, pair, run_ids=found, runner=runner, on_done=on_done))
    return reports


def redetect_pair(
    workspace: Workspace,
    pair_ref: str,
    *,
    run_ids: list[str] | None = None,
    every: bool = False,
    on_done: Callable[[Rejudged], None] | None = None,
) -> RedetectReport:
    """``twinforge redetect PAIR``: the workspace's stored runs of one pair, judged by its current detector.

    Args:
        workspace: The workspace.
        pair_ref: A pair id under ``tasks/`` or a pair folder.
        run_ids: Only these runs.
        every: Judge runs the current detector already judged as well.
        on_done: Called per run considered.

    Raises:
        PairFormatError: The pair does not load.
        RunsError: No such pair in the workspace.
        RunError: The base image is missing or the engine cannot be reached.
    """
    folder = Path(pair_ref)
    if not (folder / "pair.yaml").is_file():
        folder = workspace.tasks_dir / pair_ref
    if not (folder / "pair.yaml").is_file():
        raise RunsError(f"{pair_ref}: neither a pair folder nor a pair id under {workspace.tasks_dir}")
    return redetect(
        RecordsDB(records_url(workspace)),
        workspace.root / "runs",
        load_pair(folder),
        run_ids=run_ids,
        only_stale=not every,
        on_done=on_done,
    )
