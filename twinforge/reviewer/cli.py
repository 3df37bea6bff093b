"""``twinforge review``."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from twinforge.core.console import err_console, print_json, progress
from twinforge.core.options import JsonOption, WorkspaceOption

if TYPE_CHECKING:
    from twinforge.reviewer.pending import ReviewOutcome

# The command imports what it runs on when it runs (docs/design.md, "Command-line start-up").


class ReviewCalls(StrEnum):
    """``--mode``: how blueprints are scored (docs/stage1.md, "One call per batch")."""

    BATCH = "batch"
    SLOTS = "slots"


def review_command(
    ids: Annotated[list[str] | None, typer.Argument(help="Blueprint ids (default: every proposed blueprint).")] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(min=1, help="Reviews in flight (default: models.reviewer.concurrency, else the server's slots)."),
    ] = None,
    mode: Annotated[
        ReviewCalls | None,
        typer.Option(
            help="batch: one call scores up to ten blueprints (capable models); slots: one call per blueprint "
            "(small models). Default: models.reviewer.stage1_mode.",
        ),
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

        report = review_pending(
            ws, ids=ids or None, concurrency=concurrency, mode=None if mode is None else mode.value, on_done=done
        )
    for line in recovery_lines(report.recovery) + [f"skipped invalid blueprint file {f}" for f in report.invalid]:
        err_console.print(line, markup=False, style="yellow")
    if json_out:
        print_json(report.outcomes)
    elif not report.outcomes:
        err_console.print("nothing to review: no blueprint is proposed")
    elif report.per_scored is not None:
        usage, per = report.usage, report.per_scored
        cost = "" if report.cost_usd is None else f", ${report.cost_usd:.4f}"
        err_console.print(
            f"review ({report.mode} mode): {per.items} scored, {usage.calls} call(s), {usage.tokens:,} tokens{cost}; "
            f"per scored blueprint: {per.calls:g} calls, {per.tokens:,.0f} tokens"
            + ("" if per.cost_usd is None else f", ${per.cost_usd:.4f}"),
            markup=False,
        )
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
