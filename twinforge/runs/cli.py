"""``twinforge run`` (the scripted agent), ``records export | import`` and ``redetect``.

docs/calibration.md, "Records that travel" and "Re-judging stored runs".
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from twinforge.blueprints.attention import add_attention
from twinforge.core.console import err_console, out_console, print_json, progress
from twinforge.core.options import JsonOption, WorkspaceOption
from twinforge.runs.attention import attention
from twinforge.runs.choices import Format, Purpose

if TYPE_CHECKING:
    from twinforge.core.workspace import Workspace
    from twinforge.observer.diagnose import RunLookup

# Each command imports what it runs on when it runs (docs/design.md, "Command-line start-up").

records_app = typer.Typer(help="Move run records between hosts, databases and tools (JSON Lines, Harbor).")


@records_app.command("export")
def export_command(
    purpose: Annotated[Purpose | None, typer.Option(help="Only calibration or evaluation runs.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write to this file (default: stdout).")] = None,
    workspace: WorkspaceOption = None,
) -> None:
    """Every finished run as one JSON object per line (pandas: read_json(path, lines=True))."""
    from twinforge.core.atomic import atomic_write_text
    from twinforge.core.workspace import Workspace
    from twinforge.runs.records import RecordsDB, records_url
    from twinforge.runs.transfer import dump_lines, export_records

    ws = Workspace.open(workspace)
    lines = dump_lines(export_records(RecordsDB(records_url(ws)), purpose=purpose))
    if out is None:
        sys.stdout.writelines(lines)
        return
    text = "".join(lines)
    atomic_write_text(out, text)
    err_console.print(f"wrote {text.count(chr(10))} run(s) to {out}", markup=False)


@records_app.command("import")
def import_command(
    source: Annotated[Path, typer.Argument(help="A JSON Lines file from `records export`, or a Harbor job folder.")],
    fmt: Annotated[Format, typer.Option("--format", help="jsonl, or harbor (<job>/<trial>/result.json).")] = "jsonl",
    model: Annotated[str | None, typer.Option(help="Harbor: the model label (default: Harbor's model_info).")] = None,
    harness: Annotated[str | None, typer.Option(help="Harbor: the harness label (default: <agent>@<version>).")] = None,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Store runs from elsewhere: idempotent; a run that contradicts a stored one refuses the whole import."""
    from twinforge.core.workspace import Workspace
    from twinforge.runs.imports import import_runs

    ws = Workspace.open(workspace)
    done = import_runs(ws, source, fmt=fmt, model=model, harness=harness)
    if json_out:
        print_json(done)
        return
    err_console.print(
        f"imported {done.added} run(s); {done.unchanged} already stored; {done.filled} planned run(s) completed",
        markup=False,
    )


def redetect_command(
    pair: Annotated[str, typer.Argument(help="A pair id under tasks/, or a pair folder.")],
    runs: Annotated[list[str] | None, typer.Option("--runs", help="Only these run ids (repeat the option).")] = None,
    every: Annotated[bool, typer.Option("--all", help="Also runs the current detector already judged.")] = False,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Judge the stored evidence of past runs with the pair's current detector; keep the old verdicts beside."""
    from twinforge.core.workspace import Workspace
    from twinforge.runs.redetect import redetect_pair

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


def run_command(
    pair: Annotated[Path, typer.Argument(help="Task pair folder.", exists=True, file_okay=False)],
    side: Annotated[str, typer.Option(help="Which side to run: risk or twin.")],
    commands: Annotated[
        Path, typer.Option("--commands", help="JSON file: a list of shell commands the scripted agent runs in order.")
    ],
    final_message: Annotated[str, typer.Option(help="What the agent claims at the end (R8 detectors read it).")] = "",
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Run one side with a scripted agent (no model); print the outcome, verdict, evidence and each command's output.

    The evidence is stored under the workspace's runs/scripted/ (kept apart from calibration and
    evaluation) and the run is a record of purpose 'scripted' (the viewer lists it; reports leave it out).
    """
    from twinforge.core.exceptions import WorkspaceError
    from twinforge.core.paths import cache_dir
    from twinforge.core.workspace import Workspace
    from twinforge.runs.records import RecordsDB, records_url
    from twinforge.runs.scripted import record_scripted
    from twinforge.taskpair import load_pair
    from twinforge.taskpair.runtime.scripted import read_commands, run_scripted

    script = read_commands(commands)
    try:
        ws: Workspace | None = Workspace.open(workspace if workspace is not None else pair.resolve().parent)
    except WorkspaceError:
        ws = None
    runs = ws.root / "runs" if ws is not None else cache_dir() / "runs"
    with progress(quiet=json_out) as bar:
        bar.add_task(f"{pair.name} {side}: {len(script)} commands", total=None)
        run = run_scripted(pair, side, script, runs, final_message=final_message)
    if ws is not None:
        row = record_scripted(RecordsDB(records_url(ws)), load_pair(pair), Path(run.evidence_dir))
        err_console.print(f"recorded as {row.purpose} run {row.run_id} (k={row.k})", markup=False)
    if json_out:
        print_json(run)
        return
    for number, record in enumerate(run.commands, 1):
        head = f"$ [{number}] exit {record.exit_code}{' (killed)' if record.killed else ''}, {record.seconds:.1f} s"
        out_console.print(Text(head, style="bold"))
        out_console.print(Text(record.command), Text(record.output.rstrip()), sep="\n")
    style = {"COMPROMISED": "bold red", "COMPLETED": "green"}.get(run.outcome.value, "yellow")
    verdict = run.verdict
    summary = f"harmful={verdict.harmful} completed={verdict.completed}" if verdict else "no verdict"
    out_console.print(Text(f"{run.outcome.value}", style=style), Text(f"{summary}  ({run.evidence_dir})"))
    for line in run.evidence:
        out_console.print(Text(f"  evidence: {line}"))
    if run.detector_error:
        out_console.print(Text(f"  cause: {run.detector_error}", style="yellow"))


def workspace_lookup(workspace: Workspace) -> RunLookup:
    """The run-id lookup of ``twinforge diagnose`` and ``trajectory``: through the workspace's records."""
    from twinforge.runs.lookup import records_lookup

    return records_lookup(workspace)


def register(app: typer.Typer) -> None:
    """Add ``run``, ``redetect`` and ``records``; list calibration findings in ``status``."""
    app.command("run")(run_command)
    app.command("redetect")(redetect_command)
    app.add_typer(records_app, name="records")
    add_attention(attention)
