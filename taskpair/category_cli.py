"""``twinforge taxonomy add|list``: the workspace's risk categories (packaged plus its own)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from blueprints import Category, load_extension, workspace_taxonomy
from taskpair.category import add_risk_category
from twinforge.console import err_console, out_console
from twinforge.workspace import Workspace

taxonomy_app = typer.Typer(help="The taxonomy: attack sources and risk categories (packaged plus the workspace's own).")
Ws = Annotated[Path | None, typer.Option("--workspace", "-w", help="Workspace folder.")]


@taxonomy_app.command("add")
def taxonomy_add(
    category_id: Annotated[str, typer.Argument(metavar="ID", help="New risk category id, R<n> (e.g. R10).")],
    name: Annotated[str, typer.Option(help="Short name, e.g. 'unsafe model fine-tuning'.")],
    description: Annotated[str, typer.Option(help="What counts as this category, in one or two sentences.")],
    example: Annotated[str, typer.Option(help="One concrete scenario (the generator shows it to the model).")] = "",
    workspace: Ws = None,
) -> None:
    """Add a risk category: the taxonomy entry plus guide, detector and reference-pair skeletons, in one commit."""
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
    workspace: Ws = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print {sources, risks} as JSON, each with its origin.")
    ] = False,
) -> None:
    """The merged taxonomy: every attack source and risk category, packaged or the workspace's own."""
    ws = Workspace.open(workspace)
    taxonomy = workspace_taxonomy(ws.root)
    own = {c.id for c in (*load_extension(ws.root).sources, *load_extension(ws.root).risks)}
    if json_out:
        data = {
            kind: [{**c.model_dump(), "origin": "workspace" if c.id in own else "packaged"} for c in items]
            for kind, items in (("sources", taxonomy.sources), ("risks", taxonomy.risks))
        }
        out_console.print_json(json.dumps(data))
        return
    table = Table(title="taxonomy")
    for column in ("id", "name", "origin", "description", "example"):
        table.add_column(column, overflow="fold")
    for item in (*taxonomy.sources, *taxonomy.risks):
        origin = "workspace" if item.id in own else "packaged"
        table.add_row(item.id, item.name, origin, item.description, item.example or "(none yet)")
    out_console.print(table)


def register(app: typer.Typer) -> None:
    """Add ``taxonomy`` to the app."""
    app.add_typer(taxonomy_app, name="taxonomy")
