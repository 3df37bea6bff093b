"""``?``: every key binding with its description, and what the views mean."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

_KEY_NAMES = {"slash": "/", "question_mark": "?", "ctrl+r": "ctrl+r"}
_ABOUT = (
    "The queue starts on needs_review: blueprints the reviewer model scored 18-23 of 30 (docs/workspace.md, "
    "the queue). Views 1-6: needs_review, kept, discarded, approved, rejected, all. Each decision is written "
    "and committed to the workspace's git repository at once, with your name, the time and your reason. "
    "If someone else changed a blueprint after you opened it, your action is refused and the entry reloaded. "
    "Text from the files is shown as it is: control characters appear escaped (\\x1b, \\u202e) in reverse video."
)


class HelpScreen(ModalScreen[None]):
    """Key bindings and a short explanation; escape, q or ? closes."""

    CSS_PATH = Path(__file__).with_name("help.tcss")
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, bindings: list[BindingType]) -> None:
        super().__init__()
        self._shown_bindings = [b for b in bindings if isinstance(b, Binding)]

    def compose(self) -> ComposeResult:
        """A table of keys and descriptions."""
        table = Table(title="twinforge queue: keys", expand=True, show_edge=False)
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("what it does")
        for binding in self._shown_bindings:
            table.add_row(_KEY_NAMES.get(binding.key, binding.key), binding.description)
        table.add_row("up down pgup pgdn", "Move in the list")
        table.add_row("tab", "Move focus between the list and the detail pane (scroll it with up and down)")
        self.keys_table = table
        with VerticalScroll(id="help-box"):
            yield Static(table)
            yield Static(Text(_ABOUT, style="grey70"))

    def on_mount(self) -> None:
        """Focus the box so up / down scroll it in a small terminal."""
        self.query_one("#help-box", VerticalScroll).focus()

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)
