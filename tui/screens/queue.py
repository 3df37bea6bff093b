"""The main screen: the queue list, a status line, incremental search and the detail pane."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Static

from blueprints import (
    FIELDS,
    OVERRIDABLE,
    BlueprintFileError,
    ConflictError,
    InvalidTransition,
    ReviewActionError,
    Status,
)
from tui.screens.dialogs import EditDialog, OverrideDialog, ReasonDialog
from tui.screens.help import HelpScreen
from tui.session import SORTS, VIEWS, ReviewSession
from tui.widgets.detail import DetailPane, render_invalid, render_record
from tui.widgets.queue_list import QueueList, header_text

_OVERRIDE_TARGETS = {Status.KEPT: ["rejected", "needs_review"], Status.DISCARDED: ["approved", "needs_review"]}
_VIEW_KEYS = list(VIEWS)


class QueueScreen(Screen[None]):
    """Browse, search and decide; every action is saved and committed before it is shown as made."""

    CSS_PATH = Path(__file__).with_name("queue.tcss")
    BINDINGS = [
        Binding("a", "approve", "Approve"),
        Binding("r", "reject", "Reject"),
        Binding("e", "edit", "Edit"),
        Binding("n", "note", "Note"),
        Binding("o", "override", "Override"),
        Binding("u", "undo", "Undo"),
        Binding("j", "next", "Next", show=False),
        Binding("k", "previous", "Previous", show=False),
        Binding("slash", "search", "Search"),
        Binding("v", "next_view", "View"),
        Binding("s", "next_sort", "Sort"),
        Binding("ctrl+r", "reload", "Reload", show=False),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        *[Binding(str(i + 1), f"view('{name}')", f"View {name}", show=False) for i, name in enumerate(_VIEW_KEYS)],
    ]

    def __init__(self, session: ReviewSession) -> None:
        super().__init__()
        self.session = session
        self.current: str | None = None

    def compose(self) -> ComposeResult:
        """Header, left column (status line, search, column titles, list), detail pane, footer."""
        yield Header()
        with Horizontal():
            with Vertical(id="left"):
                yield Static(id="status-line")
                yield Input(placeholder="search all eight fields (escape: clear)", id="search")
                yield Static(header_text(), id="columns")
                yield QueueList(id="queue")
            yield DetailPane(id="detail")
        yield Footer()

    def on_mount(self) -> None:
        """Fill the list and focus it."""
        search = self.query_one("#search", Input)
        search.cursor_blink = False
        search.display = False
        self.fill()
        self.query_one(QueueList).focus()

    # listing -------------------------------------------------------------------------------

    def fill(self, keep: str | None = None) -> None:
        """Re-list the current view, sort and query; keep the cursor on ``keep`` (or the shown blueprint)."""
        rows = self.session.rows()
        self.query_one(QueueList).set_rows(rows, keep or self.current)
        self.update_status()
        if not rows:
            self.current = None
            self.query_one(DetailPane).show(Text("Nothing in this view.", style="italic"))

    def update_status(self) -> None:
        """The line above the list: progress, view, sort, search, invalid files."""
        reviewed, total = self.session.progress()
        invalid = len(self.session.invalid())
        parts = [
            Text(f"{reviewed} of {total} reviewed", style="bold cyan"),
            Text("view ", style="grey50") + Text(self.session.view, style="bold"),
            Text("sort ", style="grey50") + Text(self.session.sort, style="bold"),
        ]
        if self.session.query:
            parts.append(Text(f"search “{self.session.query}”", style="yellow"))
        if invalid:
            parts.append(Text(f"{invalid} invalid file(s)", style="bold red"))
        line = Text(" · ", style="grey50").join(parts)
        self.query_one("#status-line", Static).update(line)

    def show(self, blueprint_id: str) -> None:
        """Show one blueprint in the detail pane (remembering the version shown)."""
        self.current = blueprint_id
        pane = self.query_one(DetailPane)
        try:
            entry = self.session.entry(blueprint_id)
            if entry.error:
                pane.show(render_invalid(entry))
                return
            pane.show(render_record(self.session.open(blueprint_id)))
        except (BlueprintFileError, OSError, KeyError) as exc:
            pane.show(Text(f"{blueprint_id} cannot be shown: {exc}; reload with ctrl+r", style="red"))

    @on(QueueList.Highlighted)
    def _highlighted(self, event: QueueList.Highlighted) -> None:
        if event.entry.id != self.current:
            self.show(event.entry.id)

    def after_change(self, blueprint_id: str, message: str) -> None:
        """Re-list after a saved action: the row updates, or leaves this view and the next one is shown."""
        self.current = None
        in_view = any(e.id == blueprint_id for e in self.session.rows())
        self.fill(keep=blueprint_id if in_view else None)
        self.notify(message, timeout=3)

    # actions -------------------------------------------------------------------------------

    def _run(self, blueprint_id: str, action: Callable[[], str]) -> str | None:
        """Run a session action; returns an error message for dialogs, or None on success."""
        try:
            message = action()
        except ConflictError as exc:
            self.notify(str(exc), severity="error", timeout=8)
            self.current = None  # show the reloaded version, never the stale one
            self.fill(keep=blueprint_id)
            return None
        except (ReviewActionError, InvalidTransition, BlueprintFileError, OSError) as exc:
            return str(exc)
        self.after_change(blueprint_id, str(message))
        return None

    def _target(self) -> str | None:
        if self.current is None:
            self.notify("nothing selected", severity="warning")
            return None
        if self.session.entry(self.current).error:
            self.notify("this file is invalid; fix it on disk, then reload (ctrl+r)", severity="error")
            return None
        return self.current

    def action_approve(self) -> None:
        """Approve the selected blueprint."""
        bp = self._target()
        if bp is None:
            return
        target: str = bp
        error = self._run(target, lambda: self.session.approve(target))
        if error:
            self.notify(error, severity="error")

    def action_reject(self) -> None:
        """Reject the selected blueprint (asks for a reason)."""
        if (bp := self._target()) is not None:
            self.app.push_screen(
                ReasonDialog(
                    f"Reject {bp}", "why (required)", lambda text: self._run(bp, lambda: self.session.reject(bp, text))
                )
            )

    def action_note(self) -> None:
        """Add a note to the selected blueprint."""
        if (bp := self._target()) is not None:
            self.app.push_screen(
                ReasonDialog(
                    f"Note on {bp}", "your note", lambda text: self._run(bp, lambda: self.session.note(bp, text))
                )
            )

    def action_override(self) -> None:
        """Overturn the reviewer model's kept or discarded band (asks for the new status and a reason)."""
        if (bp := self._target()) is None:
            return
        status = Status(self.session.entry(bp).status or "proposed")
        if status not in OVERRIDABLE:
            self.notify(f"{bp} is {status.value}: only kept or discarded decisions can be overridden", severity="error")
            return
        self.app.push_screen(
            OverrideDialog(
                f"Override {bp} ({status.value})",
                _OVERRIDE_TARGETS[status],
                lambda target, reason: self._run(bp, lambda: self.session.override(bp, Status(target), reason)),
            )
        )

    def action_edit(self) -> None:
        """Edit one of the eight fields of the selected blueprint."""
        if (bp := self._target()) is None:
            return
        try:
            record = self.session.open(bp)
        except (BlueprintFileError, OSError) as exc:
            self.notify(f"cannot edit {bp}: {exc}; reload with ctrl+r", severity="error", timeout=8)
            return
        values = {f: str(getattr(record.blueprint, f)) for f in FIELDS}
        self.app.push_screen(
            EditDialog(
                f"Edit {bp}", values, lambda field, value: self._run(bp, lambda: self.session.edit(bp, field, value))
            )
        )

    def action_undo(self) -> None:
        """Undo this session's last action (restores the file as a new commit)."""
        try:
            restored = self.session.undo()
        except ConflictError as exc:
            self.notify(str(exc) + "; undo refused", severity="error", timeout=8)
            self.fill()
            return
        if restored is None:
            self.notify("nothing to undo", severity="warning")
            return
        self.fill(keep=restored)
        self.notify(f"undone: last action on {restored}", timeout=3)

    def action_next(self) -> None:
        """Select the next row."""
        self.query_one(QueueList).action_cursor(1)

    def action_previous(self) -> None:
        """Select the previous row."""
        self.query_one(QueueList).action_cursor(-1)

    def action_view(self, name: str) -> None:
        """Switch to a view (needs_review, kept, discarded, approved, rejected, all)."""
        self.session.view = name
        self.fill()

    def action_next_view(self) -> None:
        """Cycle through the views."""
        self.action_view(_VIEW_KEYS[(_VIEW_KEYS.index(self.session.view) + 1) % len(_VIEW_KEYS)])

    def action_next_sort(self) -> None:
        """Cycle the sort order: total (highest first), cell, age (oldest first)."""
        self.session.sort = SORTS[(SORTS.index(self.session.sort) + 1) % len(SORTS)]
        self.fill()

    def action_search(self) -> None:
        """Open the incremental search."""
        search = self.query_one("#search", Input)
        search.display = True
        search.focus()

    @on(Input.Changed, "#search")
    def _search_changed(self, event: Input.Changed) -> None:
        self.session.query = event.value
        self.fill()

    @on(Input.Submitted, "#search")
    def _search_done(self, event: Input.Submitted) -> None:
        self.query_one(QueueList).focus()

    def key_escape(self) -> None:
        """Escape in the search box clears it and returns to the list."""
        search = self.query_one("#search", Input)
        if search.display:
            search.value = ""
            search.display = False
            self.session.query = ""
            self.fill()
            self.query_one(QueueList).focus()

    def action_reload(self) -> None:
        """Re-read the workspace (picks up files changed by others)."""
        self.session.load()
        self.fill()
        self.notify("reloaded", timeout=2)

    def action_help(self) -> None:
        """Show every key binding with its description."""
        self.app.push_screen(HelpScreen(self.BINDINGS))

    def action_quit(self) -> None:
        """Quit; every decision shown as made is already committed."""
        self.app.exit()
