"""``twinforge calibrate`` and ``admit`` (docs/calibration.md, "Calibration" and "Admission")."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from twinforge.core.console import err_console, out_console, print_json, progress
from twinforge.core.options import JsonOption, WorkspaceOption
from twinforge.runs.progress import Address, Executor, MaxCalls, SpendCeiling, Workers, run_printer

# Each command imports what it runs on when it runs (docs/design.md, "Command-line start-up").


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
    spend_ceiling: SpendCeiling = None,
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
        done, wait = run_printer(bar, task, json_out)
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
            spend_ceiling=spend_ceiling,
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
        if report.spent_usd:
            err_console.print(f"spent ${report.spent_usd:.4f} on priced model calls", markup=False)
    if report.spend_stop:
        err_console.print(report.spend_stop, markup=False, style="yellow")
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
    from twinforge.core.workspace import Workspace
    from twinforge.runs.results import CalibrationRecord

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


def register(app: typer.Typer) -> None:
    """Add ``calibrate`` and ``admit``."""
    app.command("calibrate")(calibrate_command)
    app.command("admit")(admit_command)
