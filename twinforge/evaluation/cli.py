"""``twinforge evaluate`` and ``report`` (docs/calibration.md, "Evaluation" and "Report")."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from twinforge.core.console import err_console, out_console, print_json, progress
from twinforge.core.options import JsonOption, WorkspaceOption
from twinforge.runs.attention import attention
from twinforge.runs.progress import Address, Executor, MaxCalls, SpendCeiling, Workers, run_printer

if TYPE_CHECKING:
    from twinforge.evaluation.grid import CellReport, GridReport
    from twinforge.evaluation.model import Report
    from twinforge.evaluation.preflight import Check
    from twinforge.runs.results import RunSummary

# Each command imports what it runs on when it runs (docs/design.md, "Command-line start-up").


MODELS_HELP = escape("Models defined as [evaluation.models.NAME] in twinforge.toml, comma-separated (the grid's rows).")
HARNESSES_HELP = escape(
    "Harnesses as name[@version][:mode], comma-separated, or 'all' (every harness at its pinned version, "
    "mode bypass); e.g. claude-code@2.1.220:default, codex:workspace-write, mini-swe-agent."
)


def evaluate_command(
    models: Annotated[str, typer.Option("--models", "--model", help=MODELS_HELP)],
    harnesses: Annotated[str, typer.Option("--harnesses", "--harness", help=HARNESSES_HELP)] = "mini-swe-agent",
    runs: Annotated[
        int | None,
        typer.Option("--runs", "-k", min=1, help="K runs per side (default: evaluation.runs in twinforge.toml, 4)."),
    ] = None,
    pairs: Annotated[list[str] | None, typer.Argument(help="Admitted pair ids (default: all admitted).")] = None,
    preflight: Annotated[
        bool,
        typer.Option(
            "--preflight/--no-preflight",
            help="Before any run: each model serves each harness's API shape and answers, each CLI layer builds.",
        ),
    ] = True,
    executor: Executor = "local",
    address: Address = None,
    workers: Workers = None,
    max_calls: MaxCalls = None,
    spend_ceiling: SpendCeiling = None,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Run admitted pairs on every model x harness for benchmark results (kept apart from calibration).

    Skips what the setting evaluation.incompatible excludes, keeps runs already done, ends with Table 3.
    """
    from twinforge.core.workspace import Workspace
    from twinforge.evaluation.grid import evaluate_grid

    ws = Workspace.open(workspace)
    names = [m.strip() for m in models.split(",") if m.strip()]
    with progress(quiet=json_out) as bar:
        printer = _CellPrinter(bar, json_out)
        report = evaluate_grid(
            ws,
            names,
            harnesses,
            runs=runs,
            pairs=[Path(p).name for p in pairs] if pairs else None,
            executor=executor,
            address=address,
            workers=workers,
            max_calls=max_calls,
            preflight=preflight,
            on_check=printer.check,
            on_cell=printer.cell,
            on_done=printer.done,
            on_wait=printer.wait,
            spend_ceiling=spend_ceiling,
        )
    if json_out:
        print_json(report)
    else:
        render_grid(report)
    if report.spend_stop:
        err_console.print(report.spend_stop, markup=False, style="yellow")
    if report.errors:
        raise typer.Exit(1)


class _CellPrinter:
    """Progress per cell: one bar per model x harness, a line per preflight check and per finished run."""

    def __init__(self, bar: Any, quiet: bool) -> None:
        self.bar, self.quiet = bar, quiet
        self._done: Any = None
        self._wait: Any = None

    def check(self, check: Check) -> None:
        if self.quiet:
            return
        verdict = f"FAILED: {check.problem}" if check.problem else check.detail
        err_console.print(f"preflight {check.kind} {check.subject}: {verdict}", markup=False)

    def cell(self, event: str, index: int, total: int, cell: CellReport) -> None:
        where = f"cell {index}/{total} {cell.model} / {cell.harness}"
        if event == "skip":
            if not self.quiet:
                err_console.print(f"{where}: skipped ({cell.skipped})", markup=False)
            return
        if event == "start":
            task = self.bar.add_task(escape(where), total=None)
            self._done, self._wait = run_printer(self.bar, task, self.quiet)
            return
        done = cell.evaluation.execution if cell.evaluation else None
        if done is not None and not self.quiet:
            err_console.print(
                f"{where}: {done.ran} run(s) now, {done.skipped} done before, {len(done.errors)} error(s), "
                f"{cell.seconds:.0f} s",
                markup=False,
            )

    def done(self, result: RunSummary | None, error: str | None) -> None:
        if self._done is not None:
            self._done(result, error)

    def wait(self, busy: int) -> None:
        if self._wait is not None:
            self._wait(busy)


def render_grid(report: GridReport) -> None:
    """Table 3, the cells with their tokens, and the totals."""
    from twinforge.evaluation.texttables import matrix_table

    if report.table is not None and report.table.models:
        found = matrix_table(report.table)
        table = Table(title=escape(f"Table 3: {found.title}"))
        for column in found.header:
            table.add_column(escape(column), overflow="fold")
        for row in found.rows:
            table.add_row(*(Text(cell) for cell in row))
        out_console.print(table)
    cells = Table(title="Cells")
    priced = any(c.cost.cost_usd is not None for c in report.cells)  # a cost column only when a price is set
    columns = ["model", "harness", "status", "runs now", "model calls", "prompt tokens", "completion tokens"]
    for column in [*columns, *(["cost (USD)"] if priced else [])]:
        cells.add_column(column)
    for c in report.cells:
        done = c.evaluation.execution if c.evaluation else None
        status = f"skipped: {c.skipped}" if c.skipped else f"{c.seconds:.0f} s"
        row = [c.model, c.harness, status, str(done.ran) if done else "-", str(c.cost.calls)]
        row += [str(c.cost.prompt_tokens), str(c.cost.completion_tokens)]
        if priced:
            row.append("-" if c.cost.cost_usd is None else f"{c.cost.cost_usd:.4f}")
        cells.add_row(*(Text(cell) for cell in row))
    out_console.print(cells)
    total = report.total
    spent = f"; cost ${total.cost_usd:.4f}" if total.cost_usd is not None else ""
    out_console.print(
        f"{len(report.ran)} cell(s) run, {len(report.skipped)} skipped by rule, in {report.seconds:.0f} s; "
        f"tokens: {total.prompt_tokens} prompt + {total.completion_tokens} completion over {total.calls} model calls"
        f"{spent}",
        markup=False,
    )
    out_console.print("every table and figure: `twinforge report` (evaluation is shown apart from calibration)")


def report_command(
    out: Annotated[Path | None, typer.Option(help="Output folder (default: runs/report in the workspace).")] = None,
    compare: Annotated[
        tuple[str, str] | None,
        typer.Option(
            "--compare",
            metavar="A B",
            help="Compare two evaluated models (or two harnesses) on pairs eligible for both.",
        ),
    ] = None,
    per_combination: Annotated[
        bool, typer.Option("--per-combination", help="Also draw a risk-category radar per model x harness.")
    ] = False,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """The study's tables and figures: model x harness matrix, S1 vs S2, radars, stability, comparisons, cost.

    Written as Markdown, HTML, JSON and one CSV per table; figures as PNG and SVG.
    """
    from twinforge.blueprints import built_pairs, duplicate_pairs, workspace_taxonomy
    from twinforge.core.workspace import Workspace
    from twinforge.evaluation.cells import admitted_cells
    from twinforge.evaluation.report import build_report
    from twinforge.runs.records import RecordsDB, records_url

    ws = Workspace.open(workspace)
    try:
        report = build_report(
            RecordsDB(records_url(ws)),
            out or ws.root / "runs" / "report",
            [*duplicate_pairs(ws), *attention(ws)],
            workspace_taxonomy(ws.root),
            evaluated=admitted_cells(ws),
            pairs=built_pairs(ws),
            compare_names=compare,
            per_combination=per_combination,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--compare") from exc
    if json_out:
        print_json(report)
        return
    render_report(report)


def render_report(report: Report) -> None:
    """The report's headline tables on the terminal (the files hold all of them)."""
    from twinforge.evaluation.texttables import text_tables

    if not report.combinations and not report.calibration:
        out_console.print("no finished runs yet")
    tables = {t.name: t for t in text_tables(report)}
    for name in ("matrix", "combinations", "sources", "stability", "compare", "calibration"):
        found = tables.get(name)
        if found is None or not found.rows:
            continue
        table = Table(title=escape(found.title))
        for column in found.header:
            table.add_column(escape(column), overflow="fold")
        for row in found.visible:
            table.add_row(*(Text(cell) for cell in row))  # harness keys have brackets: never markup
        out_console.print(table)
    incomplete = sum(len(c.incomplete) for c in [*report.combinations, *report.calibration])
    if incomplete:
        err_console.print(f"{incomplete} pair(s) with incomplete observations (listed in incomplete.csv)", markup=False)
    if report.verdicts_changed:
        err_console.print(f"{report.verdicts_changed} verdict(s) changed by a newer detector", markup=False)
    for item in report.attention:
        err_console.print(f"needs a look: {item.pair} ({item.kind}): {item.detail}", markup=False)
    if report.disagreements:
        err_console.print(f"{len(report.disagreements)} run(s) with detector / trajectory disagreement", markup=False)
    for path in report.files:
        out_console.print(f"  {path}", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``evaluate`` and ``report``."""
    app.command("evaluate")(evaluate_command)
    app.command("report")(report_command)
