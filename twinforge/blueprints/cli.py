"""``twinforge status`` (counts per status, the S x R coverage matrix) and ``twinforge blueprint check|add``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from twinforge.core.console import out_console, print_json
from twinforge.core.options import JsonOption, WorkspaceOption

if TYPE_CHECKING:
    from twinforge.blueprints.intake import CheckResult

# Each command imports what it runs on when it runs (docs/design.md, "Command-line start-up").


def status_command(
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Counts of blueprints per status and the source x risk coverage matrix."""
    from twinforge.blueprints.store import BlueprintStore
    from twinforge.blueprints.summary import summarize
    from twinforge.core.workspace import Workspace

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
    if summary.archetypes:
        spread = Table(
            title="pairs by what built them (fidelity: "
            + ", ".join(f"{k} {v}" for k, v in summary.fidelity.items())
            + ")"
        )
        for column in ("built by", "pairs", "admitted"):
            spread.add_column(column)
        for by, row in sorted(summary.archetypes.items()):
            spread.add_row(by, str(row["pairs"]), str(row["admitted"]))
        out_console.print(spread)
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


Files = Annotated[list[Path], typer.Argument(help="YAML files: one blueprint each, or a list of blueprints.")]


def _print_results(results: list[CheckResult]) -> None:
    for result in results:
        style = "green" if result.passed else "red"
        verdict = "passes" if result.passed else "refused"
        out_console.print(f"[{result.index}] {result.file}: {verdict}", style=style, markup=False)
        for f in result.findings:
            kind = "refuses" if f.refuses else "caps the review"
            out_console.print(f"    {f.rule} ({f.field}, {kind}): {f.message}", markup=False)
            out_console.print(f"      hint: {f.hint}", style="grey50", markup=False)


def check_command(
    files: Files,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Run the Stage I checks on hand-written blueprints; exit 1 if any is refused."""
    from twinforge.blueprints.intake import check_entries, read_entries
    from twinforge.blueprints.taxonomy import workspace_taxonomy
    from twinforge.core.workspace import Workspace

    taxonomy = None
    if workspace is not None:
        taxonomy = workspace_taxonomy(Workspace.open(workspace).root)
    results = check_entries(read_entries(files, taxonomy))
    if json_out:
        print_json(results)
    else:
        _print_results(results)
    if not all(r.passed for r in results):
        raise typer.Exit(1)


def add_command(
    files: Files,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Add hand-written blueprints to the workspace as proposed (one commit); refused ones are not added."""
    from twinforge.blueprints.intake import add_entries, read_entries
    from twinforge.blueprints.store import BlueprintStore
    from twinforge.core.workspace import Workspace

    ws = Workspace.open(workspace)
    store = BlueprintStore(ws)
    entries = read_entries(files, store.taxonomy)
    report = add_entries(store, entries, by=ws.identity(), threshold=ws.config.generator.near_duplicate_threshold)
    if json_out:
        print_json(report)
    else:
        for blueprint_id in report.added:
            flag = f" (near-duplicate of {report.flagged[blueprint_id]})" if blueprint_id in report.flagged else ""
            out_console.print(f"added {blueprint_id} as proposed{flag}", markup=False)
        _print_results(report.refused)
        out_console.print(
            f"{len(report.added)} added, {len(report.refused)} refused; review them with twinforge review"
        )
    if report.refused:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``status`` and ``blueprint check|add`` to the app."""
    app.command("status")(status_command)
    group = typer.Typer(help="Blueprints written by hand or brought from elsewhere.", no_args_is_help=True)
    group.command("check")(check_command)
    group.command("add")(add_command)
    app.add_typer(group, name="blueprint")
