"""``twinforge calibrate``, ``twinforge admit``, ``twinforge report``."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.table import Table
from rich.text import Text

from blueprints import workspace_taxonomy
from calibration.admission import admit
from calibration.calibrate import calibrate, records_url
from calibration.exceptions import AdmissionError
from calibration.records import RecordsDB
from calibration.report import build_report
from twinforge.console import err_console, out_console, progress
from twinforge.workspace import Workspace

Ws = Annotated[Path | None, typer.Option("--workspace", "-w", help="Workspace folder.")]


def calibrate_command(
    pairs: Annotated[
        list[Path] | None, typer.Argument(help="Task pair folders (default: every pair in tasks/).")
    ] = None,
    runs: Annotated[
        int | None,
        typer.Option("--runs", "-k", min=1, help="K runs per side (default: calibration.runs in twinforge.toml)."),
    ] = None,
    executor: Annotated[str, typer.Option(help="local (a bounded pool) or ray.")] = "local",
    address: Annotated[str | None, typer.Option(help="Ray cluster address (default: a local cluster).")] = None,
    workers: Annotated[int | None, typer.Option(min=1, help="Parallel runs.")] = None,
    max_calls: Annotated[
        int | None, typer.Option(min=1, help="Quick look: cap model calls below the tasks' budgets (recorded).")
    ] = None,
    workspace: Ws = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the verdicts as JSON.")] = False,
) -> None:
    """Run each pair K times per side with the weak model on Mini-SWE-agent (resumable) and decide it."""
    ws = Workspace.open(workspace)
    dirs = pairs or sorted(p for p in ws.tasks_dir.iterdir() if (p / "pair.yaml").is_file())
    if not dirs:
        raise typer.BadParameter("no task pairs given and none in tasks/")
    k = runs or ws.config.calibration.runs
    with progress(quiet=json_out) as bar:
        task = bar.add_task(f"calibrating {len(dirs)} pair(s), K = {k}", total=None)

        def done(result: dict[str, Any] | None, error: str | None) -> None:
            bar.advance(task)
            if json_out:
                return
            if error:
                err_console.print(f"run failed: {error}", markup=False, style="yellow")
            elif result:
                why = f"; diagnosis: {result['diagnosis']}" if result.get("diagnosis") else ""
                err_console.print(
                    f"{result['pair']}/{result['side']} k={result['k']}: {result['outcome']} "
                    f"({result['calls']} calls, {result['exit_status']}{why})",
                    markup=False,
                )

        report = calibrate(
            ws, dirs, runs=k, executor=executor, address=address, workers=workers, max_calls=max_calls, on_done=done
        )
    if json_out:
        out_console.print_json(
            json.dumps(
                {
                    "ran": report.ran,
                    "skipped": report.skipped,
                    "errors": report.errors,
                    "verdicts": [asdict(v) for v in report.verdicts],
                }
            )
        )
    else:
        table = Table(title=f"calibration ({report.ran} run(s) now, {report.skipped} already done)")
        for column in ("pair", "verdict", "risk runs", "twin runs", "why"):
            table.add_column(column)
        for v in report.verdicts:
            table.add_row(
                v.pair,
                Text("passed", "green") if v.passed else Text("failed", "red"),
                " ".join(v.risk),
                " ".join(v.twin),
                v.reason,
            )
        out_console.print(table)
    if report.errors:
        raise typer.Exit(1)


def admit_command(
    pairs: Annotated[list[str] | None, typer.Argument(help="Pair ids or folders.")] = None,
    justification: Annotated[str | None, typer.Option(help="Why to keep a pair that failed calibration.")] = None,
    passed: Annotated[bool, typer.Option("--passed", help="Admit every calibrated pair that passed.")] = False,
    workspace: Ws = None,
) -> None:
    """Admit calibrated pairs into benchmark.yaml; a failed pair needs a justification."""
    ws = Workspace.open(workspace)
    if passed:
        found = sorted((ws.root / "calibration").glob("*.yaml")) if (ws.root / "calibration").is_dir() else []
        summaries = [yaml.safe_load(p.read_text()) for p in found]
        pairs = [s["pair"] for s in summaries if s.get("passed")]
        for s in summaries:
            if not s.get("passed"):
                err_console.print(f"not admitted: {s['pair']} failed calibration ({s['reason']})", markup=False)
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
        err_console.print(f"admitted {pair_id} (version {entry['version']})", markup=False)
    if failed:
        raise typer.Exit(1)


def report_command(
    out: Annotated[Path | None, typer.Option(help="Output folder (default: runs/report in the workspace).")] = None,
    workspace: Ws = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON.")] = False,
) -> None:
    """CAP and ASR@k, pooled and per risk category, attack source, model and harness; Markdown, HTML, plots."""
    ws = Workspace.open(workspace)
    report = build_report(RecordsDB(records_url(ws)), out or ws.root / "runs" / "report", workspace_taxonomy(ws.root))
    if json_out:

        def m(x: Any) -> dict[str, Any]:
            return {"pairs": x.pairs, "eligible": x.eligible, "cap": x.cap, "asr": list(x.asr)}

        out_console.print_json(
            json.dumps(
                {
                    "k": report.k,
                    "pooled": m(report.pooled),
                    "by_category": {k: m(v) for k, v in report.by_category.items()},
                    "by_source": {k: m(v) for k, v in report.by_source.items()},
                    "by_combination": {k: m(v) for k, v in report.by_combination.items()},
                    "files": [str(f) for f in report.files],
                }
            )
        )
        return
    pooled = report.pooled
    asr = ", ".join(f"ASR@{i} {100 * v:.1f} %" for i, v in enumerate(pooled.asr, start=1)) or "no eligible pair"
    out_console.print(
        f"{pooled.pairs} pairs, k = {report.k}: CAP {100 * pooled.cap:.1f} % ({pooled.eligible} eligible); {asr}"
    )
    for path in report.files:
        out_console.print(f"  {path}")


def register(app: typer.Typer) -> None:
    """Add ``calibrate``, ``admit`` and ``report``."""
    app.command("calibrate")(calibrate_command)
    app.command("admit")(admit_command)
    app.command("report")(report_command)
