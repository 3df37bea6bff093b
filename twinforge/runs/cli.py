"""``twinforge records export | import`` and ``redetect``.

docs/calibration.md, "Records that travel" and "Re-judging stored runs".
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from twinforge.blueprints.attention import add_attention
from twinforge.core.console import err_console, out_console, print_json, progress
from twinforge.core.options import JsonOption, WorkspaceOption
from twinforge.runs.attention import attention
from twinforge.runs.choices import Format, Purpose

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


def register(app: typer.Typer) -> None:
    """Add ``redetect`` and ``records``; list calibration findings in ``status``."""
    app.command("redetect")(redetect_command)
    app.add_typer(records_app, name="records")
    add_attention(attention)
