"""Screens of the queue app."""

from twinforge.tui.screens.dialogs import EditDialog, OverrideDialog, ReasonDialog
from twinforge.tui.screens.help import HelpScreen
from twinforge.tui.screens.queue import QueueScreen

__all__ = ["EditDialog", "HelpScreen", "OverrideDialog", "QueueScreen", "ReasonDialog"]
