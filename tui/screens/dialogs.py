"""Modal dialogs: a reason prompt, an override chooser, a field editor.

Each checks its input and keeps the dialog open with the error shown until the input is acceptable
or the user cancels.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Select, Static, TextArea

from blueprints import FIELDS

Submit = Callable[..., str | None]  # returns an error message, or None when the action succeeded


class _Dialog(ModalScreen[bool]):
    """Shared behaviour: escape cancels, errors show in the dialog."""

    CSS_PATH = Path(__file__).with_name("dialogs.tcss")
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def action_cancel(self) -> None:
        """Close without doing anything."""
        self.dismiss(False)

    def show_error(self, message: str) -> None:
        """Show why the input was not accepted."""
        error = self.query_one(".error", Static)
        error.update(message)
        error.display = True


class ReasonDialog(_Dialog):
    """Ask for a reason (reject, note); ``submit(text)`` performs the action.

    Args:
        title: What is being done, e.g. ``Reject S2-R3-1a2b3c4d``.
        prompt: Placeholder text.
        submit: Called with the text; returns an error message or ``None`` on success.
    """

    def __init__(self, title: str, prompt: str, submit: Submit) -> None:
        super().__init__()
        self._title, self._prompt, self._submit = title, prompt, submit

    def compose(self) -> ComposeResult:
        """Title, input, error line, hint."""
        with Vertical(classes="dialog"):
            yield Label(self._title, classes="title")
            yield Input(placeholder=self._prompt, id="reason")
            yield Static("", classes="error")
            yield Label("enter: save · escape: cancel", classes="hint")

    def on_mount(self) -> None:
        """Focus the input; no cursor blink (stable screenshots)."""
        field = self.query_one(Input)
        field.cursor_blink = False
        field.focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            self.show_error("a reason is required")
            return
        error = self._submit(event.value)
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

    def __init__(self, title: str, targets: list[str], submit: Submit) -> None:
        super().__init__()
        self._title, self._targets, self._submit = title, targets, submit

    def compose(self) -> ComposeResult:
        """Title, status chooser, reason input, error line, hint."""
        with Vertical(classes="dialog"):
            yield Label(self._title, classes="title")
            yield Select([(t, t) for t in self._targets], value=self._targets[0], allow_blank=False, id="target")
            yield Input(placeholder="why the model's decision is wrong (required)", id="reason")
            yield Static("", classes="error")
            yield Label("tab: next field · enter: save · escape: cancel", classes="hint")

    def on_mount(self) -> None:
        """Focus the reason input."""
        field = self.query_one(Input)
        field.cursor_blink = False
        field.focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            self.show_error("a reason is required")
            return
        target = str(self.query_one(Select).value)
        error = self._submit(target, event.value)
        if error:
            self.show_error(error)
        else:
            self.dismiss(True)


class EditDialog(_Dialog):
    """Edit one of the eight fields in place; validated on save, the old value kept in history.

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
        """Title, field chooser, editor, error line, hint."""
        with Vertical(classes="dialog wide"):
            yield Label(self._title, classes="title")
            yield Select([(f, f) for f in FIELDS], value=FIELDS[0], allow_blank=False, id="field")
            yield TextArea(self._values[FIELDS[0]], id="value", soft_wrap=True)
            yield Static("", classes="error")
            yield Label("ctrl+s: save · escape: cancel", classes="hint")

    def on_mount(self) -> None:
        """Focus the editor."""
        self.query_one(TextArea).focus()

    @on(Select.Changed, "#field")
    def _field_changed(self, event: Select.Changed) -> None:
        self.query_one(TextArea).text = self._values[str(event.value)]

    def action_save(self) -> None:
        """Validate and save the edited field."""
        field = str(self.query_one(Select).value)
        error = self._submit(field, self.query_one(TextArea).text)
        if error:
            self.show_error(error)
        else:
            self.dismiss(True)
