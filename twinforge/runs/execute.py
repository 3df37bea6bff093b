"""Executing planned runs for calibration or evaluation: plan, share, wait, rerun OVERTIME.

docs/calibration.md, "Runs". Every ``calibrate`` / ``evaluate`` call plans its runs in the records
database (keyed by purpose, environment digest, model, harness, budgets and k), runs what is pending on an
executor, reruns OVERTIME runs up to ``rerun_overtime`` times, and waits for runs that another live
process on the same records is executing, taking over only those whose owner died. A run whose
setup failed is retried within the same call up to ``Campaign.setup_retries`` times (evaluation:
its rerun ceiling; calibration: not at all), and by the next call.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from docker.errors import DockerException

from twinforge.core.exceptions import TwinforgeError
from twinforge.core.settings import ModelSettings
from twinforge.core.spend import SpendMeter
from twinforge.runs.budgets import Budgets
from twinforge.runs.choices import Purpose
from twinforge.runs.executors import make_executor
from twinforge.runs.jobs import Job, discard_partial, interrupt_runs, resume_runs, run_job, use_spend
from twinforge.runs.records import PlannedRun, RecordsDB, RunRow
from twinforge.runs.redetect import rejudge_stale
from twinforge.runs.results import HarnessChoice, RunSummary
from twinforge.taskpair import Side, TaskPair
from twinforge.taskpair.format.digest import environment_digest
from twinforge.taskpair.runtime.engine import client
from twinforge.taskpair.runtime.isolation import reap

WAIT_S = 2.0
"""Poll interval while another process executes some of the planned runs."""


@dataclass(frozen=True)
class Target:
    """One pair to run.

    Attributes:
        pair: The loaded pair.
        digest: Its pair digest (validated, calibrated and admitted: docs/calibration.md, "Lifecycle
            and digests"); a job refuses a pair that changed since.
        environment: Its environment digest (everything but the detectors): the runs are keyed by
            it, so editing only a detector keeps them and ``redetect`` judges their evidence again.
    """

    pair: TaskPair
    digest: str
    environment: str

    @classmethod
    def of(cls, pair: TaskPair, digest: str) -> Target:
        """A target with its environment digest computed."""
        return cls(pair, digest, environment_digest(pair.root))


@dataclass
class Execution:
    """What one execution did.

    Attributes:
        ran: Runs executed here.
        skipped: Planned runs already done before this call.
        shared: Runs another process executed while this call waited.
        errors: One line per run that could not be executed.
        rejudged: Stored runs judged again because their detector changed.
        changed: Of those, runs whose outcome changed.
        not_started: Runs the spend ceiling kept from starting (their rows stay pending: the next
            call runs them; docs/runtime.md, "Spend ceiling").
    """

    ran: int = 0
    skipped: int = 0
    shared: int = 0
    errors: list[str] = field(default_factory=list)
    rejudged: int = 0
    changed: int = 0
    not_started: int = 0


@dataclass
class Campaign:
    """The runs one call wants.

    Attributes:
        purpose: ``calibration`` or ``evaluation`` (kept apart in the records).
        model: The model block (calibration's, or the evaluated model's).
        label: ``provider:model`` as keyed in the records.
        harness: The harness and its options.
        k: Runs per side (recorded on every planned run).
        max_calls: A call cap below the tasks' own (recorded in the run key and the evidence).
        rerun_overtime: How often an OVERTIME run is rerun.
        rerun_undetermined: How often an UNDETERMINED run is rerun.
        fresh_canaries: Give every run its own canary values (docs/runtime.md, "Canaries per run").
        setup_retries: How often a run whose set-up failed is retried within the same call.
    """

    purpose: Purpose
    model: ModelSettings
    label: str
    harness: HarnessChoice
    k: int
    max_calls: int | None = None
    rerun_overtime: int = 2
    rerun_undetermined: int = 2
    fresh_canaries: bool = True
    setup_retries: int = 0

    def budgets(self, side: Side) -> Budgets:
        """A side's budgets in this campaign: the call cap only on a harness that has one (Mini-SWE-agent)."""
        return self.harness.budgets(side.spec.agent, self.max_calls)

    def owns(self, row: RunRow) -> bool:
        """The stored run belongs to this campaign's purpose, model and harness."""
        return row.purpose == self.purpose and row.model == self.label and row.harness == self.harness.key()

    def planned(self, targets: list[Target]) -> list[PlannedRun]:
        """One planned run per target, side and k."""
        key = self.harness.key()
        return [
            PlannedRun(
                t.pair.id,
                side.name,
                self.label,
                key,
                k,
                t.pair.spec.blueprint.risk,
                t.pair.spec.blueprint.source,
                digest=t.environment,
                budgets=self.budgets(side).key(),
                purpose=self.purpose,
                runs=self.k,
            )
            for t in targets
            for side in t.pair.sides()
            for k in range(1, self.k + 1)
        ]


def execute(
    campaign: Campaign,
    targets: list[Target],
    records: RecordsDB,
    runs_dir: Path,
    *,
    executor: str = "local",
    address: str | None = None,
    workers: int | None = None,
    on_done: Callable[[RunSummary | None, str | None], None] | None = None,
    on_wait: Callable[[int], None] | None = None,
    spend: SpendMeter | None = None,
) -> Execution:
    """Run every planned run that is not done yet (resumable; shared with other live processes).

    Args:
        campaign: What to run.
        targets: The pairs.
        records: The records database.
        runs_dir: ``<workspace>/runs``.
        executor: ``local`` or ``ray``.
        address: Ray cluster address.
        workers: Parallel runs.
        on_done: Called per finished run with its summary, or with an error message.
        on_wait: Called with the number of runs other processes hold, each time this call waits.
        spend: The command's spend meter: its model calls' cost is counted on it and, once its
            ceiling is reached, no new run starts; running ones finish, and the runs not started
            stay pending for the next call (:attr:`Execution.not_started`; docs/runtime.md, "Spend ceiling").

    Returns:
        Counts and errors.
    """
    planned = campaign.planned(targets)
    by_id = {t.pair.id: t for t in targets}
    report = Execution()
    # A fixed detector judges the stored evidence again instead of the runs being redone
    # (docs/calibration.md, "Re-judging stored runs").
    for found in rejudge_stale(records, runs_dir, [t.pair for t in targets], campaign.owns):
        report.rejudged += len([r for r in found.runs if r.after is not None])
        report.changed += found.changed
    failed: dict[int, int] = {}
    last_error: dict[int, str] = {}  # a run whose retry succeeded is no error of this call
    waited_for: set[int] = set()

    def done(job: Job, result: RunSummary | None, error: BaseException | None) -> None:
        if error is not None:
            failed[job.row_id] = failed.get(job.row_id, 0) + 1
            last_error[job.row_id] = f"{Path(job.pair_path).name}/{job.side} k={job.k}: {error}"
        elif result is not None and result.skipped is None:
            last_error.pop(job.row_id, None)
            report.ran += 1
            if spend is not None and executor == "ray" and result.cost_usd is not None:
                spend.add(result.cost_usd)  # a Ray worker's proxy counts on its own process's meter
        elif result is not None:
            waited_for.add(job.row_id)
        if on_done:
            on_done(result, None if error is None else str(error))

    pool = None
    refused_before = spend.runs_not_started if spend is not None else 0
    first = True
    reclaimed = False
    while True:
        plan = records.plan(
            planned, rerun_overtime=campaign.rerun_overtime, rerun_undetermined=campaign.rerun_undetermined
        )
        for run_id in plan.reclaimed:
            discard_partial(runs_dir, run_id)
            reclaimed = True
        todo = [row for row in plan.todo if failed.get(row.id, 0) <= campaign.setup_retries]
        if first:
            report.skipped = len(planned) - len(plan.todo) - len(plan.busy)
            first = False
        if not todo and not plan.busy:
            break
        if not todo:
            waited_for.update(row.id for row in plan.busy)
            if on_wait:
                on_wait(len(plan.busy))
            time.sleep(WAIT_S)
            continue
        if pool is None:
            pool = make_executor(executor, workers=workers, address=address)

        jobs = [_job(campaign, by_id[row.pair], row, records, runs_dir) for row in todo]
        refused = spend.runs_not_started if spend is not None else 0
        use_spend(spend)
        try:
            pool.run(run_job, jobs, done, interrupt_runs, spend.allows_new_run if spend is not None else None)
        finally:
            use_spend(None)
            resume_runs()  # a process that goes on after Ctrl-C (a notebook, a test) grants runs again
        if spend is not None and spend.runs_not_started > refused:
            break  # the ceiling kept runs (or reruns) from starting: they stay pending for the next call
    if reclaimed:
        # A dead owner's last Docker calls may have completed after this call's runner reaped at
        # its start; reap again now that this call's own runs are over.
        with contextlib.suppress(DockerException, TwinforgeError):
            reap(client())
    report.errors = list(last_error.values())
    report.not_started = spend.runs_not_started - refused_before if spend is not None else 0
    finished = {row.id for row in records.runs(pairs=list(by_id), purpose=campaign.purpose)}
    report.shared = len(waited_for & finished)
    return report


def _job(campaign: Campaign, target: Target, row: RunRow, records: RecordsDB, runs_dir: Path) -> Job:
    side = target.pair.risk if row.side == "risk" else target.pair.twin
    return Job(
        row_id=row.id,
        pair_path=str(target.pair.root.resolve()),
        side=side.name,
        k=row.k,
        # the model block alone: an evaluated model's harness options travel in ``harness``
        model=ModelSettings.model_validate(campaign.model.model_dump(include=set(ModelSettings.model_fields))),
        harness=campaign.harness,
        budgets=campaign.budgets(side),
        digest=target.digest,
        records_url=records.url,
        runs_dir=str(runs_dir),
        fresh_canaries=campaign.fresh_canaries,
    )
