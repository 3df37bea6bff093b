"""``twinforge status`` (counts per status, the S x R coverage matrix) and ``twinforge blueprint check|add``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from twinforge.core.console import out_console, print_json
from twinforge.core.options import JsonOption, WorkspaceOption

if TYPE_CHECKING:
    from twinforge.blueprints.findings import Finding
    from twinforge.blueprints.intake import CheckResult
    from twinforge.blueprints.release import StoredReport

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
    out_console.print(_findings_line(summary.with_doubts, summary.counts.get("refused", 0), summary.refused_by))
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


def _findings_line(with_doubts: int, refused: int, by: dict[str, int]) -> str:
    """``stored with doubts: N; refused: M (rule k, ...)``: what ``status`` and the demo say of Stage I's checks."""
    rules = ", ".join(f"{rule} {n}" for rule, n in by.items())
    return f"stored with doubts: {with_doubts}; refused: {refused}" + (f" ({rules})" if rules else "")


def _print_findings(title: str, findings: list[Finding], style: str) -> None:
    for f in findings:
        out_console.print(f"    {title} {f.rule} ({f.field}): {f.message}", style=style, markup=False)
        out_console.print(f"      hint: {f.hint}", style="grey50", markup=False)


def _print_results(results: list[CheckResult]) -> None:
    for result in results:
        verdict = "refused (defect)" if not result.passed else "passes, with doubts" if result.doubts else "passes"
        style = "red" if not result.passed else "yellow" if result.doubts else "green"
        out_console.print(f"[{result.index}] {result.file} entry {result.entry}: {verdict}", style=style, markup=False)
        if result.follow_ups:
            out_console.print(f"    {len(result.follow_ups)} later user turn(s) read and checked", markup=False)
        if result.not_read:
            out_console.print(
                f"    not read: {', '.join(result.not_read)} "
                "(only the blueprint and its follow_ups are checked and stored)",
                style="yellow",
                markup=False,
            )
        _print_findings("defect", result.defects, "red")
        _print_findings("doubt", result.doubts, "yellow")


def _print_stored(report: StoredReport) -> None:
    for result in report.results:
        if result.passed and not result.doubts and not result.released:
            continue
        verdict = "released to proposed" if result.released else "defect" if not result.passed else "doubts"
        out_console.print(f"{result.id} ({result.status}): {verdict}", markup=False)
        _print_findings("defect", result.defects, "red")
        _print_findings("doubt", result.doubts, "yellow")
    clean = sum(1 for r in report.results if r.passed and not r.doubts)
    out_console.print(
        f"{len(report.results)} checked: {clean} clean, "
        f"{sum(1 for r in report.results if r.passed and r.doubts)} with doubts, "
        f"{sum(1 for r in report.results if not r.passed)} with a defect; {len(report.released)} released",
        markup=False,
    )
    for line in report.invalid:
        out_console.print(f"invalid file (not checked): {line}", style="red", markup=False)


def check_command(
    files: Annotated[
        list[Path] | None, typer.Argument(help="YAML files: one blueprint each, or a list of blueprints.")
    ] = None,
    stored: Annotated[
        bool, typer.Option("--stored", help="Check the workspace's stored and refused blueprints instead of files.")
    ] = False,
    release: Annotated[
        bool, typer.Option("--release", help="With --stored: release refused blueprints that have no defect left.")
    ] = False,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Run the Stage I checks; print defects and doubts apart; exit 1 when any blueprint has a defect.

    With a workspace (--workspace), files are also checked against its stored blueprints (near-duplicates).
    """
    from twinforge.core.workspace import Workspace

    if stored or release:
        from twinforge.blueprints.release import check_stored
        from twinforge.blueprints.store import BlueprintStore

        if files:
            raise typer.BadParameter("--stored checks the workspace's blueprints; give no files", param_hint="FILES")
        ws = Workspace.open(workspace)
        report = check_stored(
            BlueprintStore(ws),
            release=release,
            by=ws.identity(),
            threshold=ws.config.generator.near_duplicate_threshold,
        )
        if json_out:
            print_json(report)
        else:
            _print_stored(report)
        if not all(r.passed for r in report.results):
            raise typer.Exit(1)
        return
    from twinforge.blueprints.intake import check_entries, read_entries
    from twinforge.blueprints.store import BlueprintStore

    if not files:
        raise typer.BadParameter("give blueprint files, or --stored", param_hint="FILES")
    taxonomy, pool = None, []
    if workspace is not None:
        store = BlueprintStore(Workspace.open(workspace))
        taxonomy, pool = store.taxonomy, [(r.id, r.blueprint) for r in store.records()]
    results = check_entries(read_entries(files), taxonomy, pool)
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
    """Add hand-written blueprints as proposed; those with a defect are kept refused, in the same commit (exit 1)."""
    from twinforge.blueprints.intake import add_entries, read_entries
    from twinforge.blueprints.store import BlueprintStore
    from twinforge.core.workspace import Workspace

    ws = Workspace.open(workspace)
    store = BlueprintStore(ws)
    entries = read_entries(files)
    report = add_entries(store, entries, by=ws.identity(), threshold=ws.config.generator.near_duplicate_threshold)
    if json_out:
        print_json(report)
    else:
        for blueprint_id in report.added:
            flag = f" (may repeat {report.flagged[blueprint_id]})" if blueprint_id in report.flagged else ""
            doubted = ", with doubts" if blueprint_id in report.with_doubts else ""
            out_console.print(f"added {blueprint_id} as proposed{doubted}{flag}", markup=False)
            if blueprint_id in report.not_read:
                out_console.print(
                    f"    not read: {', '.join(report.not_read[blueprint_id])} (only the blueprint and its follow_ups "
                    "are stored)",
                    style="yellow",
                    markup=False,
                )
        _print_results(report.refused)
        for blueprint_id in report.refused_ids:
            out_console.print(f"kept refused as blueprints/refused/{blueprint_id}.yaml", style="red", markup=False)
        out_console.print(
            f"{len(report.added)} added ({len(report.with_doubts)} with doubts), {len(report.refused)} refused by a "
            "defect (kept in blueprints/refused/: twinforge queue --refused, blueprint check --stored --release); "
            "review the added ones with twinforge review",
            markup=False,
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
