"""``twinforge implement``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.table import Table

from twinforge.core.console import err_console, out_console, print_json, progress
from twinforge.core.options import JsonOption, WorkspaceOption

if TYPE_CHECKING:
    from twinforge.implementer.run import BlueprintOutcome

# The command imports what it runs on when it runs (docs/design.md, "Command-line start-up").


def implement_command(
    ids: Annotated[list[str] | None, typer.Argument(help="Blueprint ids (kept, approved or impl_failed).")] = None,
    ready: Annotated[
        bool, typer.Option("--ready", help="Every kept or approved blueprint that has no pair yet.")
    ] = False,
    mode: Annotated[
        str | None,
        typer.Option(help="archetype (the model fills an archetype) or agent (Mini-SWE-agent writes the pair)."),
    ] = None,
    rounds: Annotated[int | None, typer.Option(min=1, max=20, help="Gate rounds per blueprint (default 3).")] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="At most this many blueprints (ready ones: best review total first).")
    ] = None,
    no_intervene: Annotated[
        bool, typer.Option("--no-intervene", help="Agent mode: the observer records but never intervenes (A/B).")
    ] = False,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1, help="Blueprints at once (default: models.implementer.concurrency, else the server's slots)."
        ),
    ] = None,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Implement blueprints as task pairs until the whole validation gate passes (Stage II).

    Each blueprint ends implemented (its pair in tasks/<pair-id>/) or impl_failed (the last gate
    report kept in implementation/<id>.yaml); one commit per blueprint. Resumable: run it again.
    """
    from twinforge.core.workspace import Workspace
    from twinforge.implementer.run import implement

    if mode not in (None, "archetype", "agent"):
        raise typer.BadParameter("mode must be archetype or agent", param_hint="--mode")
    chosen: Literal["archetype", "agent"] | None = mode  # type: ignore[assignment]
    ws = Workspace.open(workspace)
    with progress(quiet=json_out) as bar:
        task = bar.add_task("implementing", total=None)

        def say(blueprint_id: str, step: str) -> None:
            bar.update(task, description=f"{blueprint_id}: {step}")

        def done(outcome: BlueprintOutcome) -> None:
            bar.advance(task)
            if not json_out:
                style = "green" if outcome.outcome == "implemented" else "yellow"
                err_console.print(
                    f"{outcome.blueprint_id} -> {outcome.outcome} ({outcome.provenance}, {outcome.rounds} round(s), "
                    f"{outcome.calls} calls): {outcome.reason}",
                    markup=False,
                    style=style,
                )

        report = implement(
            ws,
            ids or None,
            ready=ready,
            mode=chosen,
            rounds=rounds,
            limit=limit,
            workers=workers,
            intervene=False if no_intervene else None,
            say=say,
            on_done=done,
        )
        bar.update(task, total=len(report.outcomes), completed=len(report.outcomes), description="implemented")
    if json_out:
        print_json(report.outcomes)
        return
    for line in report.skipped:
        err_console.print(line, markup=False)
    if not report.outcomes:
        if not report.skipped:
            err_console.print("nothing to implement: no kept or approved blueprint without a pair")
        return
    table = Table(title="implement")
    for column in ("blueprint", "pair", "outcome", "rounds", "calls", "tokens", "seconds", "failed checks"):
        table.add_column(column)
    for o in report.outcomes:
        table.add_row(
            o.blueprint_id,
            o.pair_id,
            o.outcome,
            str(o.rounds),
            str(o.calls),
            str(o.tokens),
            f"{o.seconds:.0f}",
            "; ".join(o.failed_checks[:3]),
        )
    out_console.print(table)


def register(app: typer.Typer) -> None:
    """Add ``implement`` to the app."""
    app.command("implement")(implement_command)
