"""``twinforge queue``: the Textual review-queue app."""

from __future__ import annotations

from pathlib import Path

from textual.app import App

from tui.screens.loading import LoadingScreen
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

    def __init__(self, workspace: Workspace, reviewer: str | None = None, *, background_over: int = 300) -> None:
        super().__init__()
        self.session = ReviewSession(workspace, reviewer or workspace.identity())
        self.sub_title = f"{workspace.root.name} · {self.session.reviewer}"
        self._background_over = background_over

    def on_mount(self) -> None:
        """Load the listing and show the queue; a long re-index runs in a thread behind a progress bar.

        The index is normally current (the store updates it on every write); files changed by other
        means, e.g. a ``git pull`` of a teammate's blueprints, are parsed once here.
        """
        stale = self.session.stale()
        if stale <= self._background_over:
            self.session.load()
            self.push_screen(QueueScreen(self.session))
            return
        loading = LoadingScreen(stale)
        self.push_screen(loading)

        def load() -> None:
            self.session.load(lambda done, _total: self.call_from_thread(loading.advance_to, done))
            self.call_from_thread(self.push_screen, QueueScreen(self.session))

        self.run_worker(load, thread=True, exit_on_error=True)

    def on_unmount(self) -> None:
        """Release the index database."""
        self.session.close()


def run_queue(workspace_dir: Path | None = None, reviewer: str | None = None) -> None:
    """Open the queue app on a workspace (blocks until the user quits)."""
    QueueApp(Workspace.open(workspace_dir), reviewer).run()
