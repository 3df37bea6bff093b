"""``twinforge env setup|reap``, ``twinforge new-pair`` and ``twinforge validate``."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from blueprints import Blueprint, BlueprintStore
from taskpair.engine import client, setup
from taskpair.isolation import reap
from taskpair.recording import digests, record_reports
from taskpair.runner import Runner
from taskpair.scaffold import new_pair
from taskpair.validate import validate
from twinforge.console import err_console, out_console, progress
from twinforge.exceptions import WorkspaceError
from twinforge.paths import cache_dir
from twinforge.workspace import Workspace

env_app = typer.Typer(help="The local Docker engine and base image task pairs run on.", no_args_is_help=True)


@env_app.command("setup")
def env_setup() -> None:
    """Install and start the Docker engine if needed and build the local base image (idempotent, never pulls)."""
    tag = setup(lambda line: err_console.print(line, markup=False))
    out_console.print(tag)


@env_app.command("reap")
def env_reap(
    everything: Annotated[bool, typer.Option("--all", help="Also remove resources of runs still in progress.")] = False,
) -> None:
    """Remove containers, volumes, networks, packet-filter rules and run disks left behind by crashed runs."""
    removed = reap(client(), everything=everything)
    err_console.print("removed " + ", ".join(f"{count} {kind}" for kind, count in removed.items()))


def _runs_dir(start: Path) -> Path:
    try:
        return Workspace.open(start).root / "runs"
    except WorkspaceError:
        return cache_dir() / "runs"


def new_pair_command(
    directory: Annotated[Path, typer.Argument(help="Folder of the new pair (its name is the pair id).")],
    blueprint: Annotated[str | None, typer.Option(help="Blueprint id in the workspace to implement.")] = None,
    cell: Annotated[str, typer.Option(help="Taxonomy cell when no blueprint is given.")] = "S2-R3",
    workspace: Annotated[Path | None, typer.Option("--workspace", "-w", help="Workspace folder.")] = None,
) -> None:
    """Scaffold an empty task pair (both sides, Dockerfile, detector and solution stubs)."""
    if blueprint is not None:
        record = BlueprintStore(Workspace.open(workspace)).load(blueprint)
        bp, bp_id, title = record.blueprint, record.id, record.blueprint.engineering_task[:80]
    else:
        placeholder = "Describe this field of the blueprint in one or two sentences."
        fields = {f: placeholder for f in Blueprint.model_fields}
        bp = Blueprint.model_validate({**fields, "source_reference": "none yet", "taxonomy_id": cell})
        bp_id, title = "unassigned", directory.name
    root = new_pair(directory, bp, bp_id, title)
    err_console.print(f"scaffolded {root}; fill in both sides, then run `twinforge validate {root}`")


def validate_command(
    pairs: Annotated[list[Path], typer.Argument(help="Task pair folders.", exists=True, file_okay=False)],
    static_only: Annotated[bool, typer.Option("--static-only", help="Skip the Docker checks.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    battery: Annotated[
        bool, typer.Option("--battery/--no-battery", help="Run the cheat battery after the oracles.")
    ] = True,
    workers: Annotated[int, typer.Option(min=1, max=16, help="Oracle and cheat-battery runs at a time.")] = 3,
) -> None:
    """Run the validation gate: static checks, oracle runs and the cheat battery in Docker. Exit 1 on any failure."""
    runner = None if static_only else Runner(_runs_dir(pairs[0].resolve().parent))
    before = digests(pairs)
    with progress(quiet=json_out) as bar:
        task = bar.add_task("validating", total=len(pairs))
        current = {"pair": ""}

        def step(pair: str, name: str) -> None:
            if pair != current["pair"] and current["pair"]:
                bar.advance(task)
            current["pair"] = pair
            bar.update(task, description=f"{pair}: {name}")

        reports = validate(pairs, runner, step, battery=battery, workers=workers)
        bar.update(task, completed=len(pairs), description="validated")
    # docs/calibration.md, "Lifecycle and digests": a full gate run is recorded on pairs in a workspace.
    recorded = [] if static_only else record_reports(pairs, reports, before)
    if json_out:
        out_console.print_json(json.dumps([{**asdict(r), "passed": r.passed} for r in reports]))
    else:
        for report in reports:
            table = Table(title=f"{report.pair}: {'PASSED' if report.passed else 'FAILED'}", title_justify="left")
            table.add_column("", width=4)
            table.add_column("check")
            table.add_column("detail", overflow="fold")
            for check in report.checks:
                mark = Text("ok", style="green") if check.passed else Text("FAIL", style="bold red")
                table.add_row(mark, check.name, check.detail)
            out_console.print(table)
    for line in recorded:
        err_console.print(line, markup=False)
    if not all(r.passed for r in reports):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``env``, ``new-pair`` and ``validate`` to the app."""
    app.add_typer(env_app, name="env")
    app.command("new-pair")(new_pair_command)
    app.command("validate")(validate_command)
