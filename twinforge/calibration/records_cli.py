"""``twinforge records export | import`` (docs/calibration.md, "Records that travel")."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from twinforge.calibration.choices import Format, Purpose
from twinforge.core.console import err_console, print_json
from twinforge.core.options import JsonOption, WorkspaceOption

# Each command imports what it runs on when it runs (docs/design.md, "Command-line start-up").

records_app = typer.Typer(help="Move run records between hosts, databases and tools (JSON Lines, Harbor).")


@records_app.command("export")
def export_command(
    purpose: Annotated[Purpose | None, typer.Option(help="Only calibration or evaluation runs.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write to this file (default: stdout).")] = None,
    workspace: WorkspaceOption = None,
) -> None:
    """Every finished run as one JSON object per line (pandas: read_json(path, lines=True))."""
    from twinforge.calibration.calibrate import records_url
    from twinforge.calibration.records import RecordsDB
    from twinforge.calibration.transfer import dump_lines, export_records
    from twinforge.core.atomic import atomic_write_text
    from twinforge.core.workspace import Workspace

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
    from twinforge.calibration.imports import import_runs
    from twinforge.core.workspace import Workspace

    ws = Workspace.open(workspace)
    done = import_runs(ws, source, fmt=fmt, model=model, harness=harness)
    if json_out:
        print_json(done)
        return
    err_console.print(
        f"imported {done.added} run(s); {done.unchanged} already stored; {done.filled} planned run(s) completed",
        markup=False,
    )
