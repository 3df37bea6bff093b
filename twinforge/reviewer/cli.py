"""``twinforge review``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from twinforge.core.console import err_console, print_json, progress
from twinforge.core.options import JsonOption, WorkspaceOption

if TYPE_CHECKING:
    from twinforge.reviewer.pending import ReviewOutcome

# The command imports what it runs on when it runs (docs/design.md, "Command-line start-up").


def review_command(
    ids: Annotated[list[str] | None, typer.Argument(help="Blueprint ids (default: every proposed blueprint).")] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(min=1, help="Reviews in flight (default: models.reviewer.concurrency, else the server's slots)."),
    ] = None,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Score proposed blueprints on the six dimensions and triage them (>= 24 keep, 18-23 review, < 18 discard)."""
    from twinforge.blueprints import BlueprintStore, Status
    from twinforge.core.recovery import recovery_lines
    from twinforge.core.workspace import Workspace
    from twinforge.reviewer.pending import review_pending

    ws = Workspace.open(workspace)
    total = len(ids) if ids else len(BlueprintStore(ws).records(Status.PROPOSED))
    with progress(quiet=json_out) as bar:
        task = bar.add_task("reviewing", total=total)

        def done(outcome: ReviewOutcome) -> None:
            bar.advance(task)
            if json_out:
                return
            if outcome.error:
                err_console.print(
                    f"{outcome.blueprint_id}: review failed: {outcome.error}", markup=False, style="yellow"
                )
            elif outcome.total is None:
                err_console.print(f"{outcome.blueprint_id}: {outcome.note}", markup=False, style="yellow")
            else:
                extra = f" ({outcome.note})" if outcome.note else ""
                extra += "" if outcome.committed else " (written, not committed)"
                err_console.print(
                    f"{outcome.blueprint_id}: {outcome.total}/30 -> {outcome.status.value}{extra}",
                    markup=False,
                )

        report = review_pending(ws, ids=ids or None, concurrency=concurrency, on_done=done)
    for line in recovery_lines(report.recovery) + [f"skipped invalid blueprint file {f}" for f in report.invalid]:
        err_console.print(line, markup=False, style="yellow")
    if json_out:
        print_json(report.outcomes)
    elif not report.outcomes:
        err_console.print("nothing to review: no blueprint is proposed")
    if report.commit_error:
        err_console.print(f"stopped at the first commit failure: {report.commit_error}", markup=False, style="red")
        if report.uncommitted:
            err_console.print(
                f"{len(report.uncommitted)} review(s) written to blueprints/ but not committed: "
                f"{', '.join(report.uncommitted)}; twinforge commits them on its next run once git accepts commits",
                markup=False,
            )
        if report.not_started:
            err_console.print(f"{len(report.not_started)} blueprint(s) not reviewed; they stay proposed", markup=False)
        raise typer.Exit(1)
    if report.failed:
        err_console.print(f"{len(report.failed)} review(s) failed; they stay proposed and the next run retries them")
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``review`` to the app."""
    app.command("review")(review_command)
