"""One grid cell of ``evaluate``: its admitted pairs, its model, its runs and report (docs/calibration.md).

Evaluation is kept apart from calibration: its runs carry the purpose ``evaluation`` in the
records (never read by calibration verdicts or admission), its model comes from
``[evaluation.models.<name>]`` (never ``[models.calibration]``), and it only runs pairs in
``benchmark.yaml`` whose folder still has the admitted digest. Reruns of OVERTIME, UNDETERMINED and
set-up failures go on until each repetition is a complete observation or has had
``[evaluation] rerun_ceiling`` reruns (5).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from twinforge.core.settings import EvaluatedModel
from twinforge.core.spend import SpendMeter
from twinforge.core.workspace import Workspace
from twinforge.evaluation.exceptions import EvaluationError
from twinforge.harness.naming import HarnessSpec
from twinforge.runs.execute import Campaign, Execution, Target, execute
from twinforge.runs.records import RecordsDB, records_url
from twinforge.runs.results import Benchmark, HarnessChoice, RunSummary
from twinforge.runs.rules import outcome
from twinforge.taskpair import Outcome, PairFormatError, load_pair
from twinforge.taskpair.format.digest import pair_digest


@dataclass
class PairOutcomes:
    """One evaluated pair: outcomes by k per side (``None`` where a run is missing)."""

    pair: str
    risk: list[Outcome | None]
    twin: list[Outcome | None]


@dataclass
class EvaluationReport:
    """What one ``evaluate`` call did.

    Attributes:
        model: ``provider:model`` of the evaluated model.
        harness: Harness key.
        k: Runs per side.
        pairs: Outcomes per pair.
        execution: Runs executed, skipped, shared, errors.
    """

    model: str
    harness: str
    k: int
    pairs: list[PairOutcomes] = field(default_factory=list)
    execution: Execution = field(default_factory=Execution)


def admitted_targets(workspace: Workspace, only: list[str] | None = None) -> list[Target]:
    """Admitted pairs (all, or the named ones) whose folders still have the admitted digest.

    Raises:
        EvaluationError: Nothing admitted, a named pair is not admitted, or a pair changed since
            admission (each named with what to do).
    """
    benchmark = Benchmark.read(workspace)
    entries = benchmark.pairs if not only else []
    for pair_id in only or []:
        entry = benchmark.entry(pair_id)
        if entry is None:
            raise EvaluationError(f"{pair_id} is not admitted; only pairs in benchmark.yaml are evaluated")
        entries.append(entry)
    if not entries:
        raise EvaluationError("benchmark.yaml admits no pair yet; run `twinforge admit` first")
    targets, problems = [], []
    for entry in entries:
        folder = workspace.root / entry.path
        try:
            pair, digest = load_pair(folder), pair_digest(folder)
        except PairFormatError as exc:
            problems.append(f"{entry.id}: {exc}")
            continue
        if digest != entry.version:
            problems.append(
                f"{entry.id} changed since it was admitted (version {entry.version[:12]} -> {digest[:12]}); "
                "validate, calibrate and admit it again"
            )
            continue
        targets.append(Target.of(pair, digest))
    if problems:
        raise EvaluationError("; ".join(problems))
    return targets


def admitted_cells(workspace: Workspace) -> dict[str, tuple[str, str]]:
    """The admitted set as pair id -> ``(source, risk category)``: every evaluation's denominator.

    A pair whose folder no longer loads keeps its place with the cell of its blueprint id's
    calibration record, if the folder name gives none (it still counts: CAP's denominator is the
    whole admitted set).

    Raises:
        EvaluationError: ``benchmark.yaml`` is not valid.
    """
    cells = {}
    for entry in Benchmark.read(workspace).pairs:
        try:
            bp = load_pair(workspace.root / entry.path).spec.blueprint
        except PairFormatError:
            continue
        cells[entry.id] = (bp.source, bp.risk)
    return cells


def evaluated_model(workspace: Workspace, name: str) -> EvaluatedModel:
    """``[evaluation.models.<name>]`` with ``api_shapes`` filled in.

    Raises:
        EvaluationError: No such model (the message lists the defined ones).
    """
    models = workspace.config.evaluation.models
    settings = models.get(name)
    if settings is None:
        names = ", ".join(sorted(models)) or "none defined"
        raise EvaluationError(
            f"unknown evaluated model {name!r}; define it as [evaluation.models.{name}] in "
            f"twinforge.toml (defined: {names})"
        )
    return workspace.config.with_api_shapes(settings)


def excluded_by_rule(settings: EvaluatedModel, harness: HarnessSpec, incompatible: dict[str, list[str]]) -> str | None:
    """Why the grid skips a model on a harness (``[evaluation] incompatible``), or ``None``.

    The reference study left out GPT models on Claude Code and Claude models on Codex: each of those
    harnesses drops the other vendor's reasoning state between turns (docs/calibration.md, "The grid").
    """
    family = settings.model_family()
    if harness.name in incompatible.get(family, []):
        return f"[evaluation] incompatible: family {family!r} x {harness.name}"
    return None


def run_cell(
    workspace: Workspace,
    name: str,
    settings: EvaluatedModel,
    spec: HarnessSpec,
    targets: list[Target],
    *,
    runs: int,
    executor: str,
    address: str | None,
    workers: int | None,
    max_calls: int | None,
    on_done: Callable[[RunSummary | None, str | None], None] | None = None,
    on_wait: Callable[[int], None] | None = None,
    spend: SpendMeter | None = None,
) -> EvaluationReport:
    """Run one model x harness on the targets (resumable: done runs are kept) and read back its outcomes."""
    choice = HarnessChoice.of(spec, settings.action_mode, settings.grammar)
    ceiling = workspace.config.evaluation.rerun_ceiling
    campaign = Campaign(
        "evaluation",
        settings,
        f"{settings.provider}:{settings.model}",
        choice,
        runs,
        max_calls=max_calls,
        rerun_overtime=ceiling,
        rerun_undetermined=ceiling,
        fresh_canaries=workspace.config.evaluation.fresh_canaries,
        setup_retries=ceiling,
    )
    records = RecordsDB(records_url(workspace))
    execution = execute(
        campaign,
        targets,
        records,
        workspace.root / "runs",
        executor=executor,
        address=address,
        workers=workers or workspace.config.calibration.workers or workspace.config.concurrency(settings),
        on_done=on_done,
        on_wait=on_wait,
        spend=spend,
    )
    key = choice.key()
    report = EvaluationReport(campaign.label, key, runs, execution=execution)
    rows = records.runs(pairs=[t.pair.id for t in targets], purpose="evaluation")
    for target in targets:
        keys = {side.name: campaign.budgets(side).key() for side in target.pair.sides()}
        mine = {
            (r.side, r.k): outcome(r.outcome)
            for r in rows
            if r.pair == target.pair.id
            and r.digest == target.environment
            and r.model == campaign.label
            and r.harness == key
            and r.budgets == keys[r.side]
        }
        report.pairs.append(
            PairOutcomes(
                target.pair.id,
                [mine.get(("risk", i)) for i in range(1, runs + 1)],
                [mine.get(("twin", i)) for i in range(1, runs + 1)],
            )
        )
    return report
