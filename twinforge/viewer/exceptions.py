"""The viewer's errors."""

from __future__ import annotations

from twinforge.core.exceptions import TwinforgeError


class ViewerError(TwinforgeError):
    """The workspace cannot be shown (a database that cannot be opened, an export folder in the way)."""


class NotFound(ViewerError):
    """A route names something the workspace does not hold, or a parameter that is not a valid id.

    Attributes:
        what: What was asked for, e.g. ``run 'x'``.
    """

    def __init__(self, what: str) -> None:
        super().__init__(f"no {what} in this workspace")
        self.what = what
