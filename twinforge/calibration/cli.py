"""``twinforge calibrate``, ``admit``, ``evaluate`` and ``report`` (docs/calibration.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from twinforge.blueprints.attention import add_attention
from twinforge.calibration.attention import attention
from twinforge.calibration.records_cli import records_app
from twinforge.core.console import err_console, out_console, print_json, progress
from twinforge.core.options import JsonOption, WorkspaceOption

if TYPE_CHECKING:
    from twinforge.calibration.report import Report
    from twinforge.calibration.results import RunSummary

# Each command imports what it runs on when it runs (docs/design.md, "Command-line start-up").

Executor = Annotated[str, typer.Option(help="local (a bounded pool) or ray.")]
Address = Annotated[str | None, typer.Option(help="Ray cluster address, e.g. head:6379 (default: a local cluster).")]
Workers = Annotated[int | None, typer.Option(min=1, help="Parallel runs.")]
MaxCalls = Annotated[
    int | None, typer.Option(min=1, help="Quick look: cap model calls below the tasks' budgets (recorded).")
]


def _printer(bar: Any, task: Any, quiet: bool) -> tuple[Any, Any]:
    def done(result: RunSummary | None, error: str | None) -> None:
        bar.advance(task)
        if quiet:
            return
        if error:
            err_console.print(f"run failed: {error}", markup=False, style="yellow")
        elif result and result.skipped:
            err_console.print(f"{result.pair}/{result.side} k={result.k}: {result.skipped}", markup=False)
        elif result:
            why = f"; diagnosis: {result.diagnosis}" if result.diagnosis else ""
            flags = "".join(f"; {f.kind}" for f in result.disagreements)
            outcome = result.outcome.value if result.outcome else "-"
            err_console.print(
                f"{result.pair}/{result.side} k={result.k}: {outcome} "
                f"({result.calls} calls, {result.exit_status}{why}{flags})",
                markup=False,
            )

    def wait(busy: int) -> None:
        bar.update(task, description=f"waiting for {busy} run(s) another process is executing")

    return done, wait


def calibrate_command(
    pairs: Annotated[
        list[Path] | None, typer.Argument(help="Validated task pair folders in the workspace (default: tasks/*).")
    ] = None,
    runs: Annotated[
        int | None,
        typer.Option("--runs", "-k", min=1, help="K runs per side (default: calibration.runs in twinforge.toml)."),
    ] = None,
    executor: Executor = "local",
    address: Address = None,
    workers: Workers = None,
    max_calls: MaxCalls = None,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Run validated pairs K times per side with the calibration model (resumable) and decide each."""
    from twinforge.calibration.calibrate import calibrate
    from twinforge.core.workspace import Workspace

    ws = Workspace.open(workspace)
    dirs = pairs or sorted(p for p in ws.tasks_dir.iterdir() if (p / "pair.yaml").is_file())
    if not dirs:
        raise typer.BadParameter("no task pairs given and none in tasks/")
    k = runs or ws.config.calibration.runs
    with progress(quiet=json_out) as bar:
        task = bar.add_task(f"calibrating {len(dirs)} pair(s), K = {k}", total=None)
        done, wait = _printer(bar, task, json_out)
        report = calibrate(
            ws,
            dirs,
            runs=k,
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
        table = Table(title=f"calibration ({report.ran} run(s) now, {report.skipped} already done)")
        for column in ("pair", "verdict", "risk runs", "twin runs", "why"):
            table.add_column(column)
        for v in report.verdicts:
            mark = (Text("passed", "green") if v.passed else Text("failed", "red")) if v.complete else Text("open")
            table.add_row(
                v.pair,
                mark,
                " ".join(o.value if o else "-" for o in v.risk),
                " ".join(o.value if o else "-" for o in v.twin),
                v.reason,
            )
        out_console.print(table)
        for note in report.notes:
            err_console.print(note, markup=False)
        if report.rejudged:
            err_console.print(
                f"{report.rejudged} stored run(s) judged again by the changed detector, {report.changed} changed",
                markup=False,
            )
    if report.errors:
        raise typer.Exit(1)


def admit_command(
    pairs: Annotated[list[str] | None, typer.Argument(help="Pair ids or folders.")] = None,
    justification: Annotated[str | None, typer.Option(help="Why to keep a pair that failed calibration.")] = None,
    passed: Annotated[bool, typer.Option("--passed", help="Admit every calibrated pair that passed.")] = False,
    workspace: WorkspaceOption = None,
) -> None:
    """Admit calibrated pairs into benchmark.yaml with their calibration record; a failed pair needs a justification."""
    from twinforge.calibration.admission import admit, spread_warnings
    from twinforge.calibration.exceptions import AdmissionError
    from twinforge.calibration.results import CalibrationRecord
    from twinforge.core.workspace import Workspace

    ws = Workspace.open(workspace)
    if passed:
        records = CalibrationRecord.all(ws)
        pairs = [r.pair for r in records if r.passed]
        for r in records:
            if not r.passed:
                err_console.print(f"not admitted: {r.pair} failed calibration ({r.reason})", markup=False)
        if not pairs:
            err_console.print("no calibrated pair passed; nothing admitted")
            return
    if not pairs:
        raise typer.BadParameter("name the pairs to admit, or use --passed")
    failed = False
    for pair in pairs:
        pair_id = Path(pair).name
        try:
            entry = admit(ws, pair_id, by=ws.identity(), justification=justification)
        except AdmissionError as exc:
            err_console.print(f"not admitted: {exc}", markup=False, style="red")
            failed = True
            continue
        model = f"{entry.calibration_model}{', a stand-in' if entry.stand_in else ''}"
        err_console.print(f"admitted {pair_id} (version {entry.version[:12]}, calibrated with {model})", markup=False)
        for warning in spread_warnings(ws, pair_id):
            err_console.print(f"warning: {warning}", markup=False, style="yellow")
    if failed:
        raise typer.Exit(1)


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
    from twinforge.calibration.evaluate import evaluate
    from twinforge.core.workspace import Workspace

    ws = Workspace.open(workspace)
    with progress(quiet=json_out) as bar:
        k = runs or ws.config.evaluation.runs
        task = bar.add_task(f"evaluating {model} on {harness}, K = {k}", total=None)
        done, wait = _printer(bar, task, json_out)
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
    from twinforge.calibration.calibrate import records_url
    from twinforge.calibration.evaluate import admitted_cells
    from twinforge.calibration.records import RecordsDB
    from twinforge.calibration.report import build_report
    from twinforge.core.workspace import Workspace

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
    from twinforge.calibration.texttables import text_tables

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


def redetect_command(
    pair: Annotated[str, typer.Argument(help="A pair id under tasks/, or a pair folder.")],
    runs: Annotated[list[str] | None, typer.Option("--runs", help="Only these run ids (repeat the option).")] = None,
    every: Annotated[bool, typer.Option("--all", help="Also runs the current detector already judged.")] = False,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Judge the stored evidence of past runs with the pair's current detector; keep the old verdicts beside."""
    from twinforge.calibration.redetect import redetect_pair
    from twinforge.core.workspace import Workspace

    ws = Workspace.open(workspace)
    with progress(quiet=json_out) as bar:
        task = bar.add_task(f"judging stored runs of {pair} again", total=None)
        report = redetect_pair(ws, pair, run_ids=runs, every=every, on_done=lambda _: bar.advance(task))
    if json_out:
        print_json(report)
        return
    table = Table(title=f"{report.pair}: detectors {', '.join(f'{s} {d[:12]}' for s, d in report.detectors.items())}")
    for column in ("run", "purpose", "model", "side", "k", "before", "after", "note"):
        table.add_column(column)
    for r in report.runs:
        after = (r.after.value if r.after else "-") + (" (changed)" if r.changed else "")
        note = r.skipped or r.error or ""
        table.add_row(r.run_id, r.purpose, r.model, r.side, str(r.k), r.before or "-", after, note)
    out_console.print(table)
    judged = sum(r.after is not None for r in report.runs)
    err_console.print(f"{judged} run(s) judged again, {report.changed} changed", markup=False)
    if report.other_versions:
        err_console.print(f"{report.other_versions} run(s) of other versions of the pair left alone", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``calibrate``, ``admit``, ``evaluate``, ``report``, ``records``; list calibration findings in ``status``."""
    app.command("calibrate")(calibrate_command)
    app.command("admit")(admit_command)
    app.command("evaluate")(evaluate_command)
    app.command("report")(report_command)
    app.command("redetect")(redetect_command)
    app.add_typer(records_app, name="records")
    add_attention(attention)
