"""``twinforge queue``; textual is imported only when the command runs."""

from __future__ import annotations

from typing import Annotated

import typer

from twinforge.core.options import WorkspaceOption


def queue_command(
    workspace: WorkspaceOption = None,
    reviewer: Annotated[
        str | None, typer.Option(help="Name recorded on your decisions (default: git user.name).")
    ] = None,
    refused: Annotated[
        bool, typer.Option("--refused", help="Open on the refused proposals (each defect beside its field).")
    ] = False,
) -> None:
    """Open the review queue (scored 18-23, or carrying doubts) in the terminal; ? shows the keys."""
    from twinforge.tui.app import run_queue

    run_queue(workspace, reviewer, "refused" if refused else "needs_review")


def register(app: typer.Typer) -> None:
    """Add ``queue`` to the app."""
    app.command("queue")(queue_command)
