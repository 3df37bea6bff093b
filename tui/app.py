"""``twinforge queue``: the Textual review-queue app."""

from __future__ import annotations

from pathlib import Path

from textual.app import App

from tui.screens.queue import QueueScreen
from tui.session import ReviewSession
from twinforge.workspace import Workspace


class QueueApp(App[None]):
    """Reviewers triage borderline blueprints here, keyboard first.

    Args:
        workspace: The workspace to review.
        reviewer: Name recorded on decisions (default: git ``user.name`` of the workspace).
    """

    TITLE = "twinforge queue"
    CSS_PATH = [Path(__file__).parent / "widgets" / name for name in ("detail.tcss", "queue_list.tcss")]

    def __init__(self, workspace: Workspace, reviewer: str | None = None) -> None:
        super().__init__()
        self.session = ReviewSession(workspace, reviewer or workspace.identity())
        self.sub_title = f"{workspace.root.name} · {self.session.reviewer}"

    def on_mount(self) -> None:
        """Load the listing (a refresh of the index) and show the queue."""
        self.session.load()
        self.push_screen(QueueScreen(self.session))

    def on_unmount(self) -> None:
        """Release the index database."""
        self.session.close()


def run_queue(workspace_dir: Path | None = None, reviewer: str | None = None) -> None:
    """Open the queue app on a workspace (blocks until the user quits)."""
    QueueApp(Workspace.open(workspace_dir), reviewer).run()
