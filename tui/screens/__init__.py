"""Screens of the queue app."""

from tui.screens.dialogs import EditDialog, OverrideDialog, ReasonDialog
from tui.screens.help import HelpScreen
from tui.screens.queue import QueueScreen

__all__ = ["EditDialog", "HelpScreen", "OverrideDialog", "QueueScreen", "ReasonDialog"]
