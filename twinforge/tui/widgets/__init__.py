"""Widgets of the queue app."""

from twinforge.tui.widgets.detail import DetailPane, render_invalid, render_record, score_bar
from twinforge.tui.widgets.queue_list import QueueList, header_text, row_text

__all__ = ["DetailPane", "QueueList", "header_text", "render_invalid", "render_record", "row_text", "score_bar"]
