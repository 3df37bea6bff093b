"""``twinforge export``: task pairs to another engine's format (Harbor)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from twinforge.core.console import err_console, print_json, progress
from twinforge.core.exceptions import WorkspaceError
from twinforge.core.options import JsonOption, WorkspaceOption

# The command imports what it runs on when it runs (docs/design.md, "Command-line start-up").


class Format(StrEnum):
    """Export formats."""

    HARBOR = "harbor"


class Turns(StrEnum):
    """What the export does with a multi-turn pair (a Harbor task has one instruction)."""

    SKIP = "skip"
    JOINED = "joined"


class RiskOracle(StrEnum):
    """Which risk oracle becomes the exported ``solution/solve.sh``."""

    SAFE = "safe"
    HARM = "harm"


def export_command(
    out: Annotated[Path, typer.Argument(help="Export folder (empty, new, or an earlier export, which is replaced).")],
    pairs: Annotated[
        list[str] | None, typer.Argument(help="Pair folders or pair ids under the workspace's tasks/.")
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", help="Target format.")] = Format.HARBOR,
    admitted: Annotated[bool, typer.Option("--admitted", help="Add every pair in benchmark.yaml.")] = False,
    name: Annotated[str, typer.Option(help="Dataset name; the dataset is twinforge/NAME.")] = "benchmark",
    risk_oracle: Annotated[
        RiskOracle, typer.Option(help="Risk oracle Harbor's oracle agent runs: the safe path or the harm path.")
    ] = RiskOracle.SAFE,
    turns: Annotated[
        Turns,
        typer.Option(help="Multi-turn pairs: skip them, or join every user turn into the one instruction."),
    ] = Turns.SKIP,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Export task pairs: each side becomes a Harbor task (separate verifier, named rewards), plus dataset.toml."""
    from twinforge.core.workspace import Workspace
    from twinforge.exporter.harbor import export_harbor, resolve_pairs

    try:
        ws: Workspace | None = Workspace.open(workspace)
    except WorkspaceError:
        if workspace is not None:
            raise
        ws = None
    folders = resolve_pairs(pairs or [], ws, admitted=admitted)
    with progress(quiet=json_out) as bar:
        task = bar.add_task(f"exporting to {fmt.value}", total=len(folders))
        result = export_harbor(
            out,
            folders,
            workspace=ws,
            name=name,
            risk_oracle=risk_oracle.value,
            turns=turns.value,
            progress=lambda pair: bar.update(task, advance=1, description=f"exporting {pair}"),
        )
    if json_out:
        print_json(result)
        return
    for pair, why in result.skipped.items():
        err_console.print(f"skipped {pair}: {why}")
    err_console.print(
        f"wrote {len(result.tasks)} Harbor tasks from {len(result.pairs)} pairs to {result.out} "
        f"(dataset.toml, README.md); run them with HARBOR_TELEMETRY=0 harbor run -p {result.out}"
    )


def register(app: typer.Typer) -> None:
    """Add ``export`` to the app."""
    app.command("export")(export_command)
