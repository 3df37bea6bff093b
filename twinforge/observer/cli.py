"""``twinforge diagnose``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from twinforge.core.console import out_console, print_json
from twinforge.core.options import JsonOption

# The command imports what it runs on when it runs (docs/design.md, "Command-line start-up").


def diagnose_command(
    trajectories: Annotated[list[Path], typer.Argument(help="Mini-SWE-agent trajectory files.", exists=True)],
    spec: Annotated[
        Path | None,
        typer.Option(
            help="YAML run spec (allowed_paths, protected_paths, required_files, forbidden, workdir, home, env)."
        ),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Name the misbehaviours in saved trajectories (loops, tool failures, drift), with step numbers."""
    from twinforge.observer.diagnose import diagnose_file
    from twinforge.observer.spec import load_spec

    run_spec = load_spec(spec) if spec else None
    results = {str(path): diagnose_file(path, run_spec) for path in trajectories}
    if json_out:
        print_json(results)
        return
    for path, diagnosis in results.items():
        table = Table(
            title=f"{path}: {diagnosis.label} ({diagnosis.steps} steps, {diagnosis.mode} mode, "
            f"exit {diagnosis.exit_status or '?'})",
            title_justify="left",
        )
        for column in ("class", "kind", "steps", "confidence", "evidence"):
            table.add_column(column)
        for f in diagnosis.findings:
            table.add_row(f.cls, f.kind, ",".join(map(str, f.steps)), f"{f.confidence:.2f}", f.evidence)
        out_console.print(table)


def register(app: typer.Typer) -> None:
    """Add ``diagnose``."""
    app.command("diagnose")(diagnose_command)
