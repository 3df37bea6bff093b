"""``twinforge queue``: the Textual review-queue app."""

from __future__ import annotations

import sys
from pathlib import Path

from textual.app import App

from twinforge.core.gitrepo import state_problems
from twinforge.core.recovery import recovery_lines
from twinforge.core.workspace import Workspace
from twinforge.tui.glyphs import glyphs_for
from twinforge.tui.review_queue import ReviewQueue
from twinforge.tui.safe_text import escape_controls
from twinforge.tui.screens.loading import LoadingScreen
from twinforge.tui.screens.queue import QueueScreen


def terminal_encoding() -> str | None:
    """The encoding Textual writes the screen in (its driver writes to the original stderr)."""
    stream = sys.__stderr__
    return getattr(stream, "encoding", None) if stream is not None else None


class QueueApp(App[None]):
    """Reviewers triage borderline blueprints here, keyboard first.

    Args:
        workspace: The workspace to review.
        reviewer: Name recorded on decisions (default: git ``user.name`` of the workspace).
        background_over: Re-index in a background thread, behind a progress bar, when more files
            than this changed since the last index.
        encoding: The terminal's encoding (default: the one the screen is written in); when it
            cannot show box-drawing characters the queue draws in ASCII and says so.
        view: The view shown first (``needs_review``; ``refused`` for ``queue --refused``).
    """

    TITLE = "twinforge queue"
    CSS_PATH = [Path(__file__).parent / "widgets" / name for name in ("detail.tcss", "queue_list.tcss")]

    def __init__(
        self,
        workspace: Workspace,
        reviewer: str | None = None,
        *,
        background_over: int = 300,
        encoding: str | None = None,
        view: str = "needs_review",
    ) -> None:
        super().__init__()
        self.session = ReviewQueue(workspace, reviewer or workspace.identity(), view)
        self._background_over = background_over
        self.encoding = encoding if encoding is not None else terminal_encoding()
        self.glyphs = glyphs_for(self.encoding)
        self.sub_title = escape_controls(f"{workspace.root.name}{self.glyphs.separator}{self.session.reviewer}")

    def notices(self) -> list[str]:
        """What the reviewer must know before acting: terminal encoding, repository state, recovery."""
        out = []
        if self.glyphs.ascii:
            out.append(
                f"the terminal's encoding ({self.encoding}) cannot show box-drawing characters: borders and bars "
                "are drawn in ASCII; set a UTF-8 locale (e.g. LANG=C.UTF-8) to see them"
            )
        problems = state_problems(self.session.workspace.repo)
        if problems:
            out.append("decisions cannot be committed now: " + "; ".join(problems))
        out += recovery_lines(self.session.recovery)
        return out

    def _queue_screen(self) -> QueueScreen:
        return QueueScreen(self.session, self.glyphs, self.notices())

    def on_mount(self) -> None:
        """Load the listing and show the queue; a long re-index runs in a thread behind a progress bar.

        The index is normally current (the store updates it on every write); files changed by other
        means, e.g. a ``git pull`` of a teammate's blueprints, are parsed once here.
        """
        stale = self.session.stale()
        if stale <= self._background_over:
            self.session.load()
            self.push_screen(self._queue_screen())
            return
        loading = LoadingScreen(stale)
        self.push_screen(loading)

        def load() -> None:
            self.session.load(lambda done, _total: self.call_from_thread(loading.advance_to, done))
            self.call_from_thread(self.push_screen, self._queue_screen())

        self.run_worker(load, thread=True, exit_on_error=True)

    def on_unmount(self) -> None:
        """Release the index database."""
        self.session.close()


def run_queue(workspace_dir: Path | None = None, reviewer: str | None = None, view: str = "needs_review") -> None:
    """Open the queue app on a workspace in ``view`` (blocks until the user quits)."""
    QueueApp(Workspace.open(workspace_dir), reviewer, view=view).run()
