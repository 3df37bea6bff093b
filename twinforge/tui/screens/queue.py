"""The main screen: the queue list, a status line, incremental search and the detail pane."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Vertical
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Static

from twinforge.blueprints import (
    FIELDS,
    BlueprintFileError,
    ConflictError,
    InvalidTransition,
    ReviewActionError,
    Status,
    override_targets,
)
from twinforge.core.exceptions import WorkspaceError
from twinforge.tui.glyphs import UNICODE, Glyphs
from twinforge.tui.review_queue import SORTS, VIEWS, ReviewQueue
from twinforge.tui.safe_text import escape_controls, safe_text
from twinforge.tui.screens.dialogs import EditDialog, OverrideDialog, ReasonDialog, SafeInput
from twinforge.tui.screens.help import HelpScreen
from twinforge.tui.widgets.detail import DetailPane, render_invalid, render_record, render_refused
from twinforge.tui.widgets.queue_list import QueueList, header_text

_VIEW_KEYS = list(VIEWS)
NARROW_BELOW = 100  # columns: below this the list and the detail pane are stacked, not side by side
SHORT_BELOW = 20  # rows: below this the header row is hidden to leave room for the list and the pane


class QueueScreen(Screen[None]):
    """Browse, search and decide; every action is saved and committed before it is shown as made."""

    CSS_PATH = Path(__file__).with_name("queue.tcss")
    BINDINGS = [
        Binding("question_mark", "help", "Help"),  # first, so the footer never cuts the way to every key
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
        Binding("q", "quit", "Quit"),
        *[Binding(str(i + 1), f"view('{name}')", f"View {name}", show=False) for i, name in enumerate(_VIEW_KEYS)],
    ]

    def __init__(self, session: ReviewQueue, glyphs: Glyphs = UNICODE, notices: list[str] | None = None) -> None:
        super().__init__()
        self.session = session
        self.glyphs = glyphs
        self.notices = list(notices or [])
        self.current: str | None = None
        if glyphs.ascii:
            self.add_class("-ascii")

    def compose(self) -> ComposeResult:
        """Header, list column (status line, search, column titles, list), detail pane, footer."""
        yield Header(icon="*" if self.glyphs.ascii else "⭘")
        with Container(id="main"):
            with Vertical(id="left"):
                yield Static(id="status-line")
                yield SafeInput(placeholder="search all eight fields (escape: clear)", id="search")
                yield Static(header_text(self.glyphs), id="columns")
                yield QueueList(id="queue", glyphs=self.glyphs)
            yield DetailPane(id="detail")
        yield Footer()

    def on_mount(self) -> None:
        """Fill the list, fit the layout to the terminal and focus the list."""
        search = self.query_one("#search", Input)
        search.cursor_blink = False
        search.display = False
        self._fit(self.app.size.width, self.app.size.height)
        self.fill()
        self.query_one(QueueList).focus()
        for notice in self.notices:
            self.notify(escape_controls(notice), severity="warning", timeout=30, markup=False)

    def on_resize(self, event: events.Resize) -> None:
        """Stack the panes in a narrow terminal, drop the header in a short one."""
        self._fit(event.size.width, event.size.height)

    def _fit(self, width: int, height: int) -> None:
        narrow = width < NARROW_BELOW
        self.set_class(narrow, "-narrow")
        self.set_class(height < SHORT_BELOW, "-short")
        self.query_one(QueueList).set_compact(narrow)
        self.query_one("#columns", Static).update(header_text(self.glyphs, compact=narrow))
        footer = self.query_one(Footer)
        footer.compact = narrow
        footer.show_command_palette = not narrow

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
        """The line above the list: progress, view, sort, search, invalid files, terminal notices.

        It wraps rather than cuts, so the view name is always on screen.
        """
        reviewed, total = self.session.progress()
        invalid = len(self.session.invalid())
        g = self.glyphs
        parts = [
            Text(f"{reviewed} of {total} reviewed", style="bold cyan"),
            Text("view ", style="grey50") + Text(self.session.view, style="bold"),
            Text("sort ", style="grey50") + Text(self.session.sort, style="bold"),
        ]
        if self.session.query:
            parts.append(Text(f"search {g.open_quote}", style="yellow") + safe_text(self.session.query, "yellow"))
            parts[-1].append(g.close_quote, style="yellow")
        if invalid:
            parts.append(Text(f"{invalid} invalid file(s)", style="bold red"))
        parts += [safe_text(notice, "bold yellow") for notice in self.notices]
        line = Text(g.separator, style="grey50").join(parts)
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
            refused = self.session.refused(blueprint_id)
            if refused is not None:
                pane.show(render_refused(refused, self.glyphs))
                return
            pane.show(render_record(self.session.open(blueprint_id), self.glyphs, self.session.pair_of(blueprint_id)))
        except (BlueprintFileError, OSError, KeyError) as exc:
            pane.show(safe_text(f"{blueprint_id} cannot be shown: {exc}; reload with ctrl+r", "red"))

    @on(QueueList.Highlighted)
    def _highlighted(self, event: QueueList.Highlighted) -> None:
        if event.entry.id != self.current:
            self.show(event.entry.id)

    def after_change(self, blueprint_id: str, message: str) -> None:
        """Re-list after a saved action: the row updates, or leaves this view and the next one is shown."""
        self.current = None
        in_view = any(e.id == blueprint_id for e in self.session.rows())
        self.fill(keep=blueprint_id if in_view else None)
        self.say(message, timeout=3)

    def say(self, message: str, *, severity: SeverityLevel = "information", timeout: float = 5) -> None:
        """A notification with the message's controls escaped and no markup parsed."""
        self.notify(escape_controls(message), severity=severity, timeout=timeout, markup=False)

    # actions -------------------------------------------------------------------------------

    def _run(self, blueprint_id: str, action: Callable[[], str]) -> str | None:
        """Run a session action; returns an error message for dialogs, or None on success."""
        try:
            message = action()
        except ConflictError as exc:
            self.say(str(exc), severity="error", timeout=8)
            self.current = None  # show the reloaded version, never the stale one
            self.fill(keep=blueprint_id)
            return None
        except (ReviewActionError, InvalidTransition, BlueprintFileError, WorkspaceError, OSError) as exc:
            return str(exc)
        self.after_change(blueprint_id, str(message))
        return None

    def _target(self) -> str | None:
        if self.current is None:
            self.say("nothing selected", severity="warning")
            return None
        if self.session.entry(self.current).error:
            self.say("this file is invalid; fix it on disk, then reload (ctrl+r)", severity="error")
            return None
        if self.session.refused(self.current) is not None:
            self.say(
                "a refused proposal has a defect and cannot be decided here; twinforge blueprint check --stored "
                "--release releases it once no defect is left",
                severity="warning",
                timeout=8,
            )
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
            self.say(error, severity="error", timeout=10)

    def action_reject(self) -> None:
        """Reject the selected blueprint (asks for a reason)."""
        if (bp := self._target()) is not None:
            self.app.push_screen(
                ReasonDialog(
                    f"Reject {escape_controls(bp)}",
                    "why (required)",
                    lambda text: self._run(bp, lambda: self.session.reject(bp, text)),
                )
            )

    def action_note(self) -> None:
        """Add a note to the selected blueprint."""
        if (bp := self._target()) is not None:
            self.app.push_screen(
                ReasonDialog(
                    f"Note on {escape_controls(bp)}",
                    "your note",
                    lambda text: self._run(bp, lambda: self.session.note(bp, text)),
                )
            )

    def action_override(self) -> None:
        """Overturn the reviewer model's kept or discarded band (asks for the new status and a reason)."""
        if (bp := self._target()) is None:
            return
        status = Status(self.session.entry(bp).status or "proposed")
        targets = override_targets(status)
        if not targets:
            self.say(f"{bp} is {status.value}: only kept or discarded decisions can be overridden", severity="error")
            return
        self.app.push_screen(
            OverrideDialog(
                f"Override {escape_controls(bp)} ({status.value})",
                [t.value for t in targets],
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
            self.say(f"cannot edit {bp}: {exc}; reload with ctrl+r", severity="error", timeout=8)
            return
        values = {f: str(getattr(record.blueprint, f)) for f in FIELDS}
        self.app.push_screen(
            EditDialog(
                f"Edit {escape_controls(bp)}",
                values,
                lambda field, value: self._run(bp, lambda: self.session.edit(bp, field, value)),
            )
        )

    def action_undo(self) -> None:
        """Undo this session's last action (restores the file as a new commit)."""
        try:
            restored = self.session.undo()
        except (ConflictError, WorkspaceError) as exc:
            self.say(str(exc) + "; undo refused", severity="error", timeout=8)
            self.fill()
            return
        if restored is None:
            self.say("nothing to undo", severity="warning")
            return
        self.fill(keep=restored)
        self.say(f"undone: last action on {restored}", timeout=3)

    def action_next(self) -> None:
        """Select the next row."""
        self.query_one(QueueList).action_cursor(1)

    def action_previous(self) -> None:
        """Select the previous row."""
        self.query_one(QueueList).action_cursor(-1)

    def action_view(self, name: str) -> None:
        """Switch to a view (needs_review, kept, discarded, approved, rejected, all, refused)."""
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
        self.say("reloaded", timeout=2)

    def action_help(self) -> None:
        """Show every key binding with its description."""
        self.app.push_screen(HelpScreen(self.BINDINGS))

    def action_quit(self) -> None:
        """Quit; every decision shown as made is already committed."""
        self.app.exit()
