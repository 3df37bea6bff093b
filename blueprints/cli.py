"""``twinforge status``: counts per status and the S x R coverage matrix."""

from __future__ import annotations

import typer
from rich.table import Table

from twinforge.blueprints.store import BlueprintStore
from twinforge.blueprints.summary import summarize
from twinforge.core.console import out_console, print_json
from twinforge.core.options import JsonOption, WorkspaceOption
from twinforge.core.workspace import Workspace


def status_command(
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Counts of blueprints per status and the source x risk coverage matrix."""
    store = BlueprintStore(Workspace.open(workspace))
    summary = summarize(store)
    if json_out:
        print_json(summary)
        return
    counts = Table(title="blueprints by status")
    counts.add_column("status")
    counts.add_column("n", justify="right")
    for status, n in summary.counts.items():
        counts.add_row(status, str(n), style=None if n else "dim")
    counts.add_row("total", str(sum(summary.counts.values())), style="bold")
    out_console.print(counts)
    sources = [s.id for s in store.taxonomy.sources]
    matrix = Table(title="coverage: blueprints per cell (any status)")
    matrix.add_column("risk")
    for source in sources:
        matrix.add_column(source, justify="right")
    names = {r.id: r.name for r in store.taxonomy.risks}
    for risk, row in summary.coverage.items():
        matrix.add_row(f"{risk} {names.get(risk, '')}", *(str(row.get(s, 0)) for s in sources))
    out_console.print(matrix)
    for path in summary.invalid_files:
        out_console.print(
            f"invalid file (not counted): {path}: {summary.problems.get(path, '')}", style="red", markup=False
        )
    if summary.attention:
        look = Table(title="pairs needing a look")
        for column in ("pair", "why", "detail"):
            look.add_column(column, overflow="fold")
        for item in summary.attention:
            look.add_row(item.pair, item.kind, item.detail)
        out_console.print(look)


def register(app: typer.Typer) -> None:
    """Add ``status`` to the app."""
    app.command("status")(status_command)
