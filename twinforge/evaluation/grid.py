"""The model x harness grid: ``evaluate --models A,B --harnesses all`` (docs/calibration.md, "The grid").

Every named model on every named harness, minus the combinations ``[evaluation] incompatible``
excludes (the study's GPT x Claude Code and Claude x Codex), each cell run as one ``evaluate``
(resumable: done runs are kept; on the local or Ray executor), after a preflight of every cell
(docs/calibration.md, "Preflight"). It ends with Table 3 (the model x harness matrix of ASR@k / CAP)
and the tokens each cell used, read from the records.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from twinforge.core.spend import SpendMeter
from twinforge.core.workspace import Workspace
from twinforge.evaluation.cells import (
    EvaluationReport,
    admitted_cells,
    admitted_targets,
    evaluated_model,
    excluded_by_rule,
    run_cell,
)
from twinforge.evaluation.exceptions import EvaluationError
from twinforge.evaluation.preflight import Cell, Check, Preflight
from twinforge.evaluation.preflight import preflight as check_cells
from twinforge.evaluation.report import combinations
from twinforge.evaluation.tables import Cost, Matrix, matrix
from twinforge.harness.exceptions import HarnessError
from twinforge.harness.naming import HarnessSpec, parse_harnesses
from twinforge.runs.records import RecordsDB, records_url
from twinforge.runs.results import HarnessChoice, RunSummary


@dataclass
class CellReport:
    """One cell of the grid.

    Attributes:
        model: The model's name under ``[evaluation.models]``.
        label: ``provider:model`` as keyed in the records.
        harness: The harness key, ``name@version:mode`` (with Mini-SWE-agent's action options).
        skipped: The rule that excludes the cell ('' when it ran).
        evaluation: What its ``evaluate`` did (``None`` when skipped).
        seconds: Wall-clock seconds the cell took here.
        cost: Calls, tokens and run hours of its runs (all of them, earlier calls' too).
    """

    model: str
    label: str
    harness: str
    skipped: str = ""
    evaluation: EvaluationReport | None = None
    seconds: float = 0.0
    cost: Cost = field(default_factory=Cost)


@dataclass
class GridReport:
    """What one grid call did.

    Attributes:
        cells: Every cell in order (models outer, harnesses inner), skipped ones included.
        preflight: The preflight's checks (``None`` when it was turned off).
        table: Table 3: ASR@k / CAP of the grid's cells that have runs.
        total: The cells' costs summed (the token totals).
        seconds: Wall-clock seconds of the whole call.
        spent_usd: US dollars this call's priced model calls cost (every cell's; 0 without a price).
        spend_stop: Why some runs were not started: the spend ceiling was reached (``None``: it was
            not); those runs stay pending for the next call (docs/runtime.md, "Spend ceiling").
    """

    cells: list[CellReport] = field(default_factory=list)
    preflight: Preflight | None = None
    table: Matrix | None = None
    total: Cost = field(default_factory=Cost)
    seconds: float = 0.0
    spent_usd: float = 0.0
    spend_stop: str | None = None

    @property
    def ran(self) -> list[CellReport]:
        """The cells that were run."""
        return [c for c in self.cells if c.evaluation is not None]

    @property
    def skipped(self) -> list[CellReport]:
        """The cells the rule excluded."""
        return [c for c in self.cells if c.skipped]

    @property
    def errors(self) -> list[str]:
        """Runs that could not be executed, per cell."""
        return [
            f"{c.model} / {c.harness}: {e}"
            for c in self.ran
            for e in (c.evaluation.execution.errors if c.evaluation else [])
        ]


CellEvent = Literal["start", "end", "skip"]


def evaluate_grid(
    workspace: Workspace,
    models: list[str],
    harnesses: str | list[HarnessSpec],
    *,
    runs: int | None = None,
    pairs: list[str] | None = None,
    executor: str = "local",
    address: str | None = None,
    workers: int | None = None,
    max_calls: int | None = None,
    preflight: bool = True,
    on_check: Callable[[Check], None] | None = None,
    on_cell: Callable[[CellEvent, int, int, CellReport], None] | None = None,
    on_done: Callable[[RunSummary | None, str | None], None] | None = None,
    on_wait: Callable[[int], None] | None = None,
    spend_ceiling: float | None = None,
) -> GridReport:
    """Run every model on every harness (minus the excluded pairs of family and harness).

    Args:
        workspace: The workspace.
        models: Names under ``[evaluation.models]``.
        harnesses: ``name[@version][:mode]`` specs, comma-separated, or ``all`` (or parsed specs).
        runs: K runs per side (default ``[evaluation] runs``).
        pairs: Pair ids (default: every admitted pair).
        executor: ``local`` or ``ray``.
        address: Ray cluster address.
        workers: Parallel runs within a cell.
        max_calls: Cap Mini-SWE-agent's model calls below the tasks' budgets (a quick look).
        preflight: Check every cell before the first run.
        on_check: Called with each preflight check.
        on_cell: Called as a cell starts, ends or is skipped: ``(event, index, cells, cell)``.
        on_done: Called per finished run.
        on_wait: Called while runs another process holds are awaited.
        spend_ceiling: US dollars the whole grid may spend (default ``[spend] ceiling_usd``): once
            its model calls reach it no new run starts in any cell (docs/runtime.md, "Spend ceiling").

    Raises:
        EvaluationError: An unknown model or harness, no cell left to run, a pair not admitted or
            changed since, or the preflight failed (nothing ran then).
    """
    started = time.monotonic()
    try:
        specs = parse_harnesses(harnesses) if isinstance(harnesses, str) else list(harnesses)
    except HarnessError as exc:
        raise EvaluationError(str(exc)) from exc
    if not models:
        raise EvaluationError("no model named; give --models NAME[,NAME...] from [evaluation.models]")
    incompatible = workspace.config.evaluation.incompatible
    report = GridReport()
    planned: list[Cell] = []
    for name in models:
        settings = evaluated_model(workspace, name)
        for spec in specs:
            choice = HarnessChoice.of(spec, settings.action_mode, settings.grammar)
            cell = CellReport(name, f"{settings.provider}:{settings.model}", choice.key())
            cell.skipped = excluded_by_rule(settings, spec, incompatible) or ""
            report.cells.append(cell)
            if not cell.skipped:
                planned.append(Cell(name, settings, spec))
    if not planned:
        rules = "; ".join(sorted({c.skipped for c in report.cells}))
        raise EvaluationError(f"every combination asked for is excluded ({rules}); to run it, change that setting")
    targets = admitted_targets(workspace, pairs)
    if preflight:
        report.preflight = check_cells(planned, targets, on_check=on_check)
    k = runs or workspace.config.evaluation.runs
    meter = SpendMeter(spend_ceiling or workspace.config.spend.ceiling_usd)
    todo = iter(planned)
    for index, cell in enumerate(report.cells, start=1):
        if cell.skipped:
            if on_cell:
                on_cell("skip", index, len(report.cells), cell)
            continue
        plan = next(todo)
        if on_cell:
            on_cell("start", index, len(report.cells), cell)
        began = time.monotonic()
        cell.evaluation = run_cell(
            workspace,
            plan.name,
            evaluated_model(workspace, plan.name),
            plan.harness,
            targets,
            runs=k,
            executor=executor,
            address=address,
            workers=workers,
            max_calls=max_calls,
            on_done=on_done,
            on_wait=on_wait,
            spend=meter,
        )
        cell.seconds = time.monotonic() - began
        if on_cell:
            on_cell("end", index, len(report.cells), cell)
    _summarise(workspace, report)
    report.spent_usd = meter.spent_usd
    if meter.runs_not_started:
        report.spend_stop = meter.stop_message
    report.seconds = time.monotonic() - started
    return report


def _summarise(workspace: Workspace, report: GridReport) -> None:
    """Table 3 and the costs of the grid's cells, from the records (earlier calls' runs included)."""
    rows = RecordsDB(records_url(workspace)).runs(purpose="evaluation")
    wanted = {(c.label, c.harness): c for c in report.ran}
    mine = [c for c in combinations(rows, evaluated=admitted_cells(workspace)) if (c.model, c.harness) in wanted]
    for found in mine:
        wanted[(found.model, found.harness)].cost = found.cost
    report.table = matrix(mine)
    total = Cost()
    for cell in report.ran:
        total = total.plus(cell.cost)
    report.total = total
