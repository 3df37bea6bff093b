"""``twinforge evaluate`` and ``report`` (docs/calibration.md, "Evaluation" and "Report")."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from twinforge.core.console import err_console, out_console, print_json, progress
from twinforge.core.options import JsonOption, WorkspaceOption
from twinforge.runs.attention import attention
from twinforge.runs.progress import Address, Executor, MaxCalls, Workers, run_printer

if TYPE_CHECKING:
    from twinforge.evaluation.model import Report

# Each command imports what it runs on when it runs (docs/design.md, "Command-line start-up").


def evaluate_command(
    model: Annotated[str, typer.Option("--model", help="A model defined as [evaluation.models.NAME].")],
    harness: Annotated[str, typer.Option(help="Harness adapter.")] = "mini-swe-agent",
    runs: Annotated[
        int | None,
        typer.Option("--runs", "-k", min=1, help="K runs per side (default: evaluation.runs in twinforge.toml, 4)."),
    ] = None,
    pairs: Annotated[list[str] | None, typer.Argument(help="Admitted pair ids (default: all admitted).")] = None,
    executor: Executor = "local",
    address: Address = None,
    workers: Workers = None,
    max_calls: MaxCalls = None,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Run admitted pairs with a named model and harness for benchmark results (kept apart from calibration)."""
    from twinforge.core.workspace import Workspace
    from twinforge.evaluation.evaluate import evaluate

    ws = Workspace.open(workspace)
    with progress(quiet=json_out) as bar:
        k = runs or ws.config.evaluation.runs
        task = bar.add_task(f"evaluating {model} on {harness}, K = {k}", total=None)
        done, wait = run_printer(bar, task, json_out)
        report = evaluate(
            ws,
            model,
            harness=harness,
            runs=k,
            pairs=[Path(p).name for p in pairs] if pairs else None,
            executor=executor,
            address=address,
            workers=workers,
            max_calls=max_calls,
            on_done=done,
            on_wait=wait,
        )
    if json_out:
        print_json(report)
    else:
        table = Table(title=f"evaluation of {report.model} / {report.harness} ({report.execution.ran} run(s) now)")
        for column in ("pair", "risk runs", "twin runs"):
            table.add_column(column)
        for p in report.pairs:
            table.add_row(
                p.pair, " ".join(o.value if o else "-" for o in p.risk), " ".join(o.value if o else "-" for o in p.twin)
            )
        out_console.print(table)
        out_console.print("metrics: `twinforge report` (evaluation is shown apart from calibration)")
    if report.execution.errors:
        raise typer.Exit(1)


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
    from twinforge.evaluation.evaluate import admitted_cells
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
        table = Table(title=found.title)
        for column in found.header:
            table.add_column(column, overflow="fold")
        for row in found.visible:
            table.add_row(*row)
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
