"""Shown while the blueprint index is rebuilt (files changed outside twinforge, or a first open)."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Label, ProgressBar


class LoadingScreen(Screen[None]):
    """A progress bar over the files being parsed.

    Args:
        total: Files to parse.
    """

    CSS_PATH = Path(__file__).with_name("loading.tcss")

    def __init__(self, total: int) -> None:
        super().__init__()
        self.total = total
        self.bar = ProgressBar(total=total, id="loading-bar")

    def compose(self) -> ComposeResult:
        """A label and a bar."""
        with Vertical(id="loading-box"):
            yield Label(f"Indexing {self.total} blueprint files changed since the last index...")
            yield self.bar

    def advance_to(self, done: int) -> None:
        """Show ``done`` files parsed."""
        self.bar.update(progress=done)
