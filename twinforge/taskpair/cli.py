"""``twinforge env setup|reap``, ``new-pair``, ``validate`` and ``taxonomy add|list``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from twinforge.core.console import err_console, out_console, print_json, progress
from twinforge.core.exceptions import WorkspaceError
from twinforge.core.options import JsonOption, WorkspaceOption
from twinforge.core.paths import cache_dir

# Each command imports what it runs on when it runs (docs/design.md, "Command-line start-up").

env_app = typer.Typer(help="The local Docker engine and base image task pairs run on.", no_args_is_help=True)


@env_app.command("setup")
def env_setup() -> None:
    """Install and start the Docker engine if needed and build the local base image (idempotent, never pulls)."""
    from twinforge.taskpair.runtime.engine import setup

    tag = setup(lambda line: err_console.print(line, markup=False))
    out_console.print(tag)


@env_app.command("reap")
def env_reap(
    everything: Annotated[bool, typer.Option("--all", help="Also remove resources of runs still in progress.")] = False,
) -> None:
    """Remove containers, volumes, networks, packet-filter rules and run disks left behind by crashed runs."""
    from twinforge.taskpair.runtime.engine import client
    from twinforge.taskpair.runtime.isolation import reap

    removed = reap(client(), everything=everything)
    err_console.print("removed " + ", ".join(f"{count} {kind}" for kind, count in removed.items()))


def _runs_dir(start: Path) -> Path:
    from twinforge.core.workspace import Workspace

    try:
        return Workspace.open(start).root / "runs"
    except WorkspaceError:
        return cache_dir() / "runs"


def new_pair_command(
    directory: Annotated[Path, typer.Argument(help="Folder of the new pair (its name is the pair id).")],
    blueprint: Annotated[str | None, typer.Option(help="Blueprint id in the workspace to implement.")] = None,
    cell: Annotated[str, typer.Option(help="Taxonomy cell when no blueprint is given.")] = "S2-R3",
    workspace: WorkspaceOption = None,
) -> None:
    """Scaffold an empty task pair (both sides, Dockerfile, detector and solution stubs)."""
    from twinforge.blueprints import Blueprint, BlueprintStore
    from twinforge.core.workspace import Workspace
    from twinforge.taskpair.format.scaffold import new_pair

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
    json_out: JsonOption = False,
    battery: Annotated[
        bool, typer.Option("--battery/--no-battery", help="Run the cheat battery after the oracles.")
    ] = True,
    workers: Annotated[int, typer.Option(min=1, max=16, help="Oracle and cheat-battery runs at a time.")] = 3,
) -> None:
    """Run the validation gate: static checks, oracle runs and the cheat battery in Docker. Exit 1 on any failure."""
    from twinforge.taskpair.gate.recording import digests, record_reports
    from twinforge.taskpair.gate.validate import validate
    from twinforge.taskpair.runtime.runner import Runner

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
    # docs/calibration.md, "Lifecycle and digests": only a full gate run (oracles and the cheat battery)
    # is recorded on pairs in a workspace; a partial one never makes a pair `validated`.
    full = not static_only and battery
    recorded = record_reports(pairs, reports, before) if full else []
    if not static_only and not battery:
        err_console.print("not recorded as validated: the cheat battery was skipped (--no-battery)", markup=False)
    if json_out:
        print_json(reports)
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


taxonomy_app = typer.Typer(help="The taxonomy: attack sources and risk categories (packaged plus the workspace's own).")


@taxonomy_app.command("add")
def taxonomy_add(
    category_id: Annotated[str, typer.Argument(metavar="ID", help="New risk category id, R<n> (e.g. R10).")],
    name: Annotated[str, typer.Option(help="Short name, e.g. 'unsafe model fine-tuning'.")],
    description: Annotated[str, typer.Option(help="What counts as this category, in one or two sentences.")],
    example: Annotated[str, typer.Option(help="One concrete scenario (the generator shows it to the model).")] = "",
    workspace: WorkspaceOption = None,
) -> None:
    """Add a risk category: the taxonomy entry plus guide, detector and reference-pair skeletons, in one commit."""
    from twinforge.blueprints import Category
    from twinforge.core.workspace import Workspace
    from twinforge.taskpair.format.category import add_risk_category

    ws = Workspace.open(workspace)
    category = Category(id=category_id, name=name, description=description, example=example)
    added = add_risk_category(ws, category)
    err_console.print(f"added {category.id} ({category.name}) in commit {added.commit[:10]}:")
    for path in added.files:
        err_console.print(f"  {path}", markup=False)
    err_console.print(
        "fill the skeletons (CONTRIBUTING.md, 'A new risk category'); "
        f"`twinforge validate guidelines/reference-pairs/ref-{category.id.lower()}-example` lists what is left"
    )


@taxonomy_app.command("list")
def taxonomy_list(
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """The merged taxonomy: every attack source and risk category, packaged or the workspace's own."""
    from twinforge.blueprints.taxonomy import load_extension, taxonomy_listing, workspace_taxonomy
    from twinforge.core.workspace import Workspace

    ws = Workspace.open(workspace)
    taxonomy = workspace_taxonomy(ws.root)
    own = {c.id for c in (*load_extension(ws.root).sources, *load_extension(ws.root).risks)}
    if json_out:
        print_json(taxonomy_listing(ws.root))
        return
    table = Table(title="taxonomy")
    for column in ("id", "name", "origin", "description", "example"):
        table.add_column(column, overflow="fold")
    for item in (*taxonomy.sources, *taxonomy.risks):
        origin = "workspace" if item.id in own else "packaged"
        table.add_row(item.id, item.name, origin, item.description, item.example or "(none yet)")
    out_console.print(table)


def register(app: typer.Typer) -> None:
    """Add ``env``, ``new-pair``, ``validate`` and ``taxonomy`` to the app (``run`` is the runs package's)."""
    app.add_typer(env_app, name="env")
    app.command("new-pair")(new_pair_command)
    app.command("validate")(validate_command)
    app.add_typer(taxonomy_app, name="taxonomy")
