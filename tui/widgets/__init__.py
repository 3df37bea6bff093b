"""Widgets of the queue app."""

from tui.widgets.detail import DetailPane, render_invalid, render_record, score_bar
from tui.widgets.queue_list import QueueList, header_text, row_text

__all__ = ["DetailPane", "QueueList", "header_text", "render_invalid", "render_record", "row_text", "score_bar"]
