"""The queue list: a virtual list over the current rows, rendered line by line.

Textual's DataTable pays about 0.1 ms per added row, so 10,000 blueprints cost a second before the
first paint and again on every re-sort or search keystroke. This widget keeps the rows as a plain
list and renders only the visible lines (Textual's line API), so re-filtering is a list operation
and painting costs the same for 10 or 10,000 rows.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from twinforge.blueprints import Entry
from twinforge.tui.glyphs import UNICODE, Glyphs
from twinforge.tui.safe_text import escape_controls, first_line, safe_text

STATUS_STYLE = {
    "needs_review": "yellow",
    "kept": "green",
    "discarded": "red",
    "approved": "bold green",
    "rejected": "bold red",
    "proposed": "grey50",
    "refused": "red",
}
COLUMNS = (("id", 15), ("cell", 6), ("status", 13), ("total", 6), ("flag", 2), ("created", 17), ("engineering task", 0))
_COMPACT_DROPS = ("created",)  # narrow terminals: the creation time goes, the task stays visible


def _columns(compact: bool) -> list[tuple[str, int]]:
    return [(n, w) for n, w in COLUMNS if not (compact and n in _COMPACT_DROPS)]


def header_text(glyphs: Glyphs = UNICODE, *, compact: bool = False) -> Text:
    """The column titles, aligned with :func:`row_text`."""
    names = {"flag": glyphs.flag}
    return Text(
        "".join(names.get(n, n).ljust(w) if w else n for n, w in _columns(compact)),
        style="bold",
    )


def row_text(entry: Entry, glyphs: Glyphs = UNICODE, *, compact: bool = False) -> Text:
    """One row: id, cell, status, total, flag, created, first line of the engineering task.

    Values from the file are shown with control characters escaped (:mod:`twinforge.tui.safe_text`).
    """
    ident = escape_controls(entry.id)
    ident = ident.ljust(15)[:15] if len(ident) <= 15 else ident[:14] + glyphs.more[:1]
    if entry.error:
        gap = " " * (6 + 2 + (0 if compact else 17))  # total, flag and created stay empty
        return Text.assemble(
            ident, " " * 6, ("INVALID".ljust(13), "bold red"), gap, safe_text(first_line(entry.error), "red")
        )
    status = entry.status or ""
    cells: list[str | Text | tuple[str, str]] = [
        ident,
        escape_controls(entry.cell or "").ljust(6),
        (status.ljust(13), STATUS_STYLE.get(status, "")),
        ("" if entry.total is None else str(entry.total)).ljust(6),
        (f"{glyphs.flag} " if entry.flagged else "  ", "magenta"),
    ]
    if not compact:
        cells.append((entry.created_at or "")[:16].replace("T", " ").ljust(17))
    cells.append(safe_text(first_line(entry.task, glyphs.more)))
    return Text.assemble(*cells)


class QueueList(ScrollView, can_focus=True):
    """Rows of blueprints with a cursor; posts :class:`QueueList.Highlighted` when the cursor moves."""

    COMPONENT_CLASSES = {"queue-list--cursor", "queue-list--odd"}
    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
    ]

    cursor: reactive[int] = reactive(0, always_update=False, init=False)

    class Highlighted(Message):
        """The cursor is on a new row."""

        def __init__(self, entry: Entry) -> None:
            super().__init__()
            self.entry = entry

    def __init__(self, *, id: str | None = None, glyphs: Glyphs = UNICODE) -> None:
        super().__init__(id=id)
        self.glyphs = glyphs
        self.compact = False
        self.rows: list[Entry] = []
        self._width = 200
        self._strips: dict[tuple[int, bool, int, int], Strip] = {}

    # data ---------------------------------------------------------------------------------

    def set_rows(self, rows: list[Entry], keep: str | None = None) -> None:
        """Replace the rows; keep the cursor on ``keep`` when it is still listed, else near where it was."""
        ids = [e.id for e in rows]
        old = self.cursor
        self.rows = rows
        self._strips.clear()
        self._width = max((len(e.task) for e in rows[:2000]), default=40) + 70
        self.virtual_size = Size(self._width, len(rows))
        target = ids.index(keep) if keep in ids else min(old, max(len(rows) - 1, 0))
        self.set_reactive(QueueList.cursor, target)
        self._scroll_cursor_into_view()
        self.refresh()
        if rows:
            self.post_message(self.Highlighted(rows[target]))

    def set_compact(self, compact: bool) -> None:
        """Drop (or bring back) the columns a narrow terminal has no room for."""
        if compact != self.compact:
            self.compact = compact
            self._strips.clear()
            self.refresh()

    @property
    def current(self) -> Entry | None:
        """The entry under the cursor."""
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    # movement -----------------------------------------------------------------------------

    def watch_cursor(self, old: int, new: int) -> None:
        """Repaint the two affected lines, keep the cursor visible, announce the new row."""
        self.refresh_line(old)
        self.refresh_line(new)
        self._scroll_cursor_into_view()
        if 0 <= new < len(self.rows):
            self.post_message(self.Highlighted(self.rows[new]))

    def _scroll_cursor_into_view(self) -> None:
        top, height = int(self.scroll_offset.y), max(self.size.height, 1)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False)

    def _move_to(self, row: int) -> None:
        if self.rows:
            self.cursor = max(0, min(row, len(self.rows) - 1))

    def action_cursor(self, step: int) -> None:
        """Move the cursor by ``step`` rows."""
        self._move_to(self.cursor + step)

    def action_page(self, direction: int) -> None:
        """Move by one screen height."""
        self._move_to(self.cursor + direction * max(self.size.height - 1, 1))

    def action_jump(self, row: int) -> None:
        """Go to the first (0) or last (-1) row."""
        self._move_to(len(self.rows) - 1 if row < 0 else row)

    def on_click(self, event: events.Click) -> None:
        """Select the clicked row."""
        self._move_to(int(self.scroll_offset.y) + event.y)

    # rendering ----------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        """Render visible line ``y``: only what is on screen is ever turned into segments (and cached)."""
        scroll_x, scroll_y = self.scroll_offset
        index = int(scroll_y) + y
        width = self.size.width
        if index >= len(self.rows):
            return Strip.blank(width, self.rich_style)
        key = (index, index == self.cursor, int(scroll_x), width)
        strip = self._strips.get(key)
        if strip is None:
            if len(self._strips) > 1000:
                self._strips.clear()
            strip = self._strips[key] = self._render_row(index, int(scroll_x), width)
        return strip

    def _render_row(self, index: int, scroll_x: int, width: int) -> Strip:
        segments = list(row_text(self.rows[index], self.glyphs, compact=self.compact).render(self.app.console))
        strip = Strip(segments).crop(scroll_x, scroll_x + width).extend_cell_length(width)
        if index == self.cursor:
            cursor = self.rich_style + self.get_component_rich_style("queue-list--cursor")
            return Strip([Segment(s.text, cursor) for s in strip])
        background = self.rich_style
        if index % 2:
            background += self.get_component_rich_style("queue-list--odd")
        return Strip([Segment(s.text, background + (s.style or Style())) for s in strip])

    def notify_style_update(self) -> None:
        """Styles changed (focus, theme): drop cached lines."""
        self._strips.clear()
        super().notify_style_update()
