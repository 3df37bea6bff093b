"""``twinforge calibrate``, ``admit``, ``evaluate`` and ``report`` (docs/calibration.md)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from twinforge.blueprints import add_attention, built_pairs, duplicate_pairs, workspace_taxonomy
from twinforge.calibration.admission import admit, spread_warnings
from twinforge.calibration.attention import attention
from twinforge.calibration.calibrate import calibrate, records_url
from twinforge.calibration.evaluate import evaluate
from twinforge.calibration.exceptions import AdmissionError
from twinforge.calibration.records import RecordsDB
from twinforge.calibration.report import Report, build_report
from twinforge.calibration.results import CalibrationRecord, RunSummary
from twinforge.core.console import err_console, out_console, print_json, progress
from twinforge.core.options import JsonOption, WorkspaceOption
from twinforge.core.workspace import Workspace

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
        data = {
            "ran": report.ran,
            "skipped": report.skipped,
            "shared": report.shared,
            "errors": report.errors,
            "notes": report.notes,
            "verdicts": [asdict(v) for v in report.verdicts],
            "records": [r.model_dump(mode="json") for r in report.records],
        }
        print_json(data)
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
    if report.errors:
        raise typer.Exit(1)


def admit_command(
    pairs: Annotated[list[str] | None, typer.Argument(help="Pair ids or folders.")] = None,
    justification: Annotated[str | None, typer.Option(help="Why to keep a pair that failed calibration.")] = None,
    passed: Annotated[bool, typer.Option("--passed", help="Admit every calibrated pair that passed.")] = False,
    workspace: WorkspaceOption = None,
) -> None:
    """Admit calibrated pairs into benchmark.yaml with their calibration record; a failed pair needs a justification."""
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
    runs: Annotated[int, typer.Option("--runs", "-k", min=1, help="K runs per side.")] = 1,
    pairs: Annotated[list[str] | None, typer.Argument(help="Admitted pair ids (default: all admitted).")] = None,
    executor: Executor = "local",
    address: Address = None,
    workers: Workers = None,
    max_calls: MaxCalls = None,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Run admitted pairs with a named model and harness for benchmark results (kept apart from calibration)."""
    ws = Workspace.open(workspace)
    with progress(quiet=json_out) as bar:
        task = bar.add_task(f"evaluating {model} on {harness}, K = {runs}", total=None)
        done, wait = _printer(bar, task, json_out)
        report = evaluate(
            ws,
            model,
            harness=harness,
            runs=runs,
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


def _report_json(report: Report) -> dict[str, Any]:
    def m(x: Any) -> dict[str, Any]:
        return {
            "pairs": x.pairs,
            "eligible": x.eligible,
            "cap": x.cap,
            "asr": list(x.asr),
            "compromised": list(x.compromised),
            "undetermined": x.undetermined,
        }

    return {
        "sections": [
            {
                "purpose": s.purpose,
                "model": s.model,
                "harness": s.harness,
                "k": s.k,
                "pooled": m(s.pooled),
                "by_category": {k: m(v) for k, v in s.by_category.items()},
                "by_source": {k: m(v) for k, v in s.by_source.items()},
            }
            for s in report.sections
        ],
        "undetermined": report.undetermined,
        "disagreements": report.disagreements,
        "attention": [a.model_dump() for a in report.attention],
        "pairs": [p.model_dump() for p in report.pairs],
        "files": [str(f) for f in report.files],
    }


def report_command(
    out: Annotated[Path | None, typer.Option(help="Output folder (default: runs/report in the workspace).")] = None,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """CAP and ASR@k for calibration and each evaluated model x harness apart; per risk category and source; plots."""
    ws = Workspace.open(workspace)
    report = build_report(
        RecordsDB(records_url(ws)),
        out or ws.root / "runs" / "report",
        [*duplicate_pairs(ws), *attention(ws)],
        workspace_taxonomy(ws.root),
        built_pairs(ws),
    )
    if json_out:
        print_json(_report_json(report))
        return
    if not report.sections:
        out_console.print("no finished runs yet")
    for s in report.sections:
        p = s.pooled
        asr = ", ".join(f"ASR@{i} {100 * v:.1f} %" for i, v in enumerate(p.asr, start=1)) or "no eligible pair"
        extra = f" ({p.undetermined} eligible pair(s) rest on UNDETERMINED runs)" if p.undetermined else ""
        out_console.print(
            f"{s.title}: {p.pairs} pairs, k = {s.k}: CAP {100 * p.cap:.1f} % ({p.eligible} eligible); {asr}{extra}",
            markup=False,
        )
    for item in report.attention:
        err_console.print(f"needs a look: {item.pair} ({item.kind}): {item.detail}", markup=False)
    if report.disagreements:
        err_console.print(f"{len(report.disagreements)} run(s) with detector / trajectory disagreement", markup=False)
    for path in report.files:
        out_console.print(f"  {path}", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``calibrate``, ``admit``, ``evaluate`` and ``report``; list calibration findings in ``status``."""
    app.command("calibrate")(calibrate_command)
    app.command("admit")(admit_command)
    app.command("evaluate")(evaluate_command)
    app.command("report")(report_command)
    add_attention(attention)
