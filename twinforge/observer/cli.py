"""``twinforge diagnose`` and ``twinforge trajectory``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from twinforge.core.console import out_console, print_json
from twinforge.core.options import JsonOption, WorkspaceOption

if TYPE_CHECKING:
    from twinforge.core.workspace import Workspace
    from twinforge.observer.diagnose import RunLookup

# The commands import what they run on when they run (docs/design.md, "Command-line start-up").

TargetsArgument = Annotated[
    list[str],
    typer.Argument(help="Trajectory files (Mini-SWE-agent or ATIF), run folders (runs/<run-id>/) or run ids."),
]


LookupFactory = Callable[["Workspace"], "RunLookup"]
"""A workspace -> its run-id lookup (the runs package's goes through the records database)."""


class _Lookups:
    """The lookup factory ``register`` was given (the commands build the lookup when they run)."""

    factory: LookupFactory | None = None


def _lookup(workspace: Path | None) -> RunLookup | None:
    """The run-id lookup of the workspace holding ``workspace`` (or the current folder), if there is one."""
    from twinforge.core.exceptions import TwinforgeError
    from twinforge.core.workspace import Workspace
    from twinforge.observer.diagnose import runs_folder_lookup

    try:
        ws = Workspace.open(workspace)
    except TwinforgeError:
        if workspace is not None:
            raise
        return None
    return _Lookups.factory(ws) if _Lookups.factory is not None else runs_folder_lookup(ws.root / "runs")


def diagnose_command(
    targets: TargetsArgument,
    spec: Annotated[
        Path | None,
        typer.Option(
            help="YAML run spec (allowed_paths, protected_paths, required_files, forbidden, workdir, home, env)."
        ),
    ] = None,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Name the misbehaviours of runs of any harness (loops, tool failures, drift) by step, and why a twin failed."""
    from twinforge.observer.diagnose import diagnose_file, resolve
    from twinforge.observer.spec import load_spec

    run_spec = load_spec(spec) if spec else None
    lookup = _lookup(workspace)
    results = {target: diagnose_file(resolve(target, lookup), run_spec) for target in targets}
    if json_out:
        print_json(results)
        return
    for target, diagnosis in results.items():
        cause = f"; twin not CAPABLE: {diagnosis.cause.cause} ({diagnosis.cause.evidence})" if diagnosis.cause else ""
        table = Table(
            title=f"{target}: {diagnosis.label} ({diagnosis.steps} steps, {diagnosis.harness or diagnosis.mode}, "
            f"exit {diagnosis.exit_status or '?'}){cause}",
            title_justify="left",
        )
        for column in ("class", "kind", "steps", "confidence", "evidence"):
            table.add_column(column)
        for f in diagnosis.findings:
            table.add_row(f.cls, f.kind, ",".join(map(str, f.steps)), f"{f.confidence:.2f}", f.evidence)
        out_console.print(table)


def trajectory_command(
    target: Annotated[str, typer.Argument(help="A run folder (runs/<run-id>/), a run id or a trajectory file.")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the ATIF file here (default: print it).")
    ] = None,
    workspace: WorkspaceOption = None,
) -> None:
    """Export a run's trajectory, from any harness, as ATIF (Harbor's Agent Trajectory Interchange Format)."""
    from twinforge.core.atomic import atomic_write_text
    from twinforge.observer.diagnose import resolve
    from twinforge.observer.trajectory.atif import Agent, AtifTrajectory
    from twinforge.observer.trajectory.read import load_document
    from twinforge.observer.trajectory.run import load_run
    from twinforge.observer.trajectory.to_atif import to_atif

    path = resolve(target, _lookup(workspace))
    if path.is_dir():
        document = load_run(path)
    else:
        loaded = load_document(path)
        document = (
            loaded if isinstance(loaded, AtifTrajectory) else to_atif(loaded, Agent(name="mini-swe-agent", version=""))
        )
    text = document.model_dump_json(indent=1, exclude_none=True)
    if out is None:
        out_console.print_json(text)
        return
    atomic_write_text(out, text + "\n")


def register(app: typer.Typer, lookups: LookupFactory | None = None) -> None:
    """Add ``diagnose`` and ``trajectory``; run ids are looked up with ``lookups`` (default: the ``runs/`` folders)."""
    _Lookups.factory = lookups
    app.command("diagnose")(diagnose_command)
    app.command("trajectory")(trajectory_command)
