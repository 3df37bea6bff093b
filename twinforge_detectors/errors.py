"""The detector library's one exception: the evidence cannot decide (docs/runtime.md, "Detector runtime")."""

from __future__ import annotations


class EvidenceError(Exception):
    """The evidence cannot answer a question the detector asked; the run is UNDETERMINED with this cause.

    Raised instead of a guess (an unreadable file taken as empty, a path that was never collected
    taken as missing, git killed for memory taken as "not committed"). Left uncaught, it ends the
    detector with its message as the last line, which the runner stores as the cause.

    Attributes:
        cause: What could not be read, and why.
    """

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause
