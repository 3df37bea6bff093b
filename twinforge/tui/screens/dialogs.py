"""Modal dialogs: a reason prompt, an override chooser, a field editor.

Each checks its input and keeps the dialog open with the error shown until the input is acceptable
or the user cancels. Reasons and notes are multi-line fields; nothing typed, pasted or loaded is
ever shown with raw control characters (:mod:`twinforge.tui.safe_text`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Select, Static, TextArea

from twinforge.blueprints import FIELDS
from twinforge.tui.safe_text import escape_controls, safe_text

Submit = Callable[..., str | None]  # returns an error message, or None when the action succeeded


class _Dialog(ModalScreen[bool]):
    """Shared behaviour: escape cancels, errors show in the dialog."""

    CSS_PATH = Path(__file__).with_name("dialogs.tcss")
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def action_cancel(self) -> None:
        """Close without doing anything."""
        self.dismiss(False)

    def show_error(self, message: str) -> None:
        """Show why the input was not accepted (controls escaped, no markup)."""
        error = self.query_one(".error", Static)
        error.update(safe_text(message))
        error.display = True


class SafeInput(Input):
    """A one-line input that never holds raw control characters: pasted ones arrive as their escapes."""

    def _on_paste(self, event: events.Paste) -> None:
        event.stop()
        event.prevent_default()  # Input's own handler would insert the raw text too
        if event.text:
            line = escape_controls(event.text.splitlines()[0])
            if self.selection.is_empty:
                self.insert_text_at_cursor(line)
            else:
                self.replace(line, *self.selection)


class SafeTextArea(TextArea):
    """A text area that never holds raw control characters: pasted ones arrive as their escapes.

    Line breaks in pasted text are kept (a multi-line reason or note is kept whole).
    """

    async def _on_paste(self, event: events.Paste) -> None:
        event.stop()
        event.prevent_default()
        if self.read_only:
            return
        text = escape_controls(event.text.replace("\r\n", "\n").replace("\r", "\n"))
        if result := self._replace_via_keyboard(text, *self.selection):
            self.move_cursor(result.end_location)
            self.focus()


class ReasonArea(SafeTextArea):
    """A multi-line reason: enter saves, ctrl+j (or shift+enter) starts a new line, a paste keeps its lines."""

    class Submitted(Message):
        """Enter was pressed: save the reason."""

        def __init__(self, area: ReasonArea) -> None:
            super().__init__()
            self.area = area

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.post_message(self.Submitted(self))
            return
        if event.key in ("ctrl+j", "shift+enter"):
            event.stop()
            event.prevent_default()
            self._replace_via_keyboard("\n", *self.selection)
            return
        await super()._on_key(event)


_REASON_HINT = "enter: save, ctrl+j: new line (pasted lines are kept), escape: cancel"


class ReasonDialog(_Dialog):
    """Ask for a reason (reject, note); ``submit(text)`` performs the action.

    The reason is a multi-line field, so a pasted multi-line reason is kept whole.

    Args:
        title: What is being done, e.g. ``Reject S2-R3-1a2b3c4d``.
        prompt: Placeholder text.
        submit: Called with the text; returns an error message or ``None`` on success.
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("ctrl+s", "save", "Save")]

    def __init__(self, title: str, prompt: str, submit: Submit) -> None:
        super().__init__()
        self._title, self._prompt, self._submit = title, prompt, submit

    def compose(self) -> ComposeResult:
        """Title, hint, error line, reason."""
        with Vertical(classes="dialog"):
            yield Label(safe_text(self._title), classes="title")
            yield Label(_REASON_HINT, classes="hint", markup=False)
            yield Static("", classes="error", markup=False)
            yield ReasonArea(id="reason", soft_wrap=True, placeholder=self._prompt)

    def on_mount(self) -> None:
        """Focus the reason; no cursor blink (stable screenshots)."""
        field = self.query_one(ReasonArea)
        field.cursor_blink = False
        field.focus()

    @on(ReasonArea.Submitted)
    def _submitted(self, event: ReasonArea.Submitted) -> None:
        self.action_save()

    def action_save(self) -> None:
        """Save the reason, or say why it cannot be saved."""
        text = self.query_one(ReasonArea).text
        if not text.strip():
            self.show_error("a reason is required")
            return
        error = self._submit(text)
        if error:
            self.show_error(error)
        else:
            self.dismiss(True)


class OverrideDialog(_Dialog):
    """Overturn a kept or discarded band: choose the new status and give a reason.

    Args:
        title: What is being overridden.
        targets: Allowed new statuses.
        submit: Called with ``(target, reason)``; returns an error message or ``None``.
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("ctrl+s", "save", "Save")]

    def __init__(self, title: str, targets: list[str], submit: Submit) -> None:
        super().__init__()
        self._title, self._targets, self._submit = title, targets, submit

    def compose(self) -> ComposeResult:
        """Title, hint, error line, status chooser, reason."""
        with Vertical(classes="dialog"):
            yield Label(safe_text(self._title), classes="title")
            yield Label("tab: next field, " + _REASON_HINT, classes="hint", markup=False)
            yield Static("", classes="error", markup=False)
            yield Select([(t, t) for t in self._targets], value=self._targets[0], allow_blank=False, id="target")
            yield ReasonArea(id="reason", soft_wrap=True, placeholder="why the model's decision is wrong (required)")

    def on_mount(self) -> None:
        """Focus the reason."""
        field = self.query_one(ReasonArea)
        field.cursor_blink = False
        field.focus()

    @on(ReasonArea.Submitted)
    def _submitted(self, event: ReasonArea.Submitted) -> None:
        self.action_save()

    def action_save(self) -> None:
        """Apply the override, or say why it cannot be applied."""
        text = self.query_one(ReasonArea).text
        if not text.strip():
            self.show_error("a reason is required")
            return
        target = str(self.query_one(Select).value)
        error = self._submit(target, text)
        if error:
            self.show_error(error)
        else:
            self.dismiss(True)


class EditDialog(_Dialog):
    """Edit one of the eight fields in place; validated on save, the old value kept in history.

    A value holding control characters is shown with them escaped (never raw): saving writes
    what is shown, so the escapes become plain text (a warning line says so).

    Args:
        title: Which blueprint.
        values: Current value of each field.
        submit: Called with ``(field, value)``; returns an error message or ``None``.
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("ctrl+s", "save", "Save")]

    def __init__(self, title: str, values: dict[str, str], submit: Submit) -> None:
        super().__init__()
        self._title, self._values, self._submit = title, values, submit

    def compose(self) -> ComposeResult:
        """Title, hint, error line, warning, field chooser, editor."""
        with Vertical(classes="dialog wide"):
            yield Label(safe_text(self._title), classes="title")
            yield Label("ctrl+s: save, escape: cancel", classes="hint", markup=False)
            yield Static("", classes="error", markup=False)
            yield Static("", classes="warning", markup=False)
            yield Select([(f, f) for f in FIELDS], value=FIELDS[0], allow_blank=False, id="field")
            yield SafeTextArea(id="value", soft_wrap=True)

    def on_mount(self) -> None:
        """Show the first field and focus the editor."""
        self._load(FIELDS[0])
        self.query_one(SafeTextArea).focus()

    def _load(self, field: str) -> None:
        value = self._values[field]
        shown = escape_controls(value)
        self.query_one(SafeTextArea).text = shown
        warning = self.query_one(".warning", Static)
        warning.update(
            "this field holds control characters, shown escaped; saving stores the text as shown"
            if shown != value
            else ""
        )
        warning.display = shown != value

    @on(Select.Changed, "#field")
    def _field_changed(self, event: Select.Changed) -> None:
        self._load(str(event.value))

    def action_save(self) -> None:
        """Validate and save the edited field."""
        field = str(self.query_one(Select).value)
        error = self._submit(field, self.query_one(SafeTextArea).text)
        if error:
            self.show_error(error)
        else:
            self.dismiss(True)
