"""The detector library's one exception: the evidence cannot decide (docs/runtime.md, "Detector runtime")."""

from __future__ import annotations


class EvidenceError(Exception):
    """The evidence cannot answer a question the detector asked; the run is UNDETERMINED with this cause.

    Raised instead of a guess (an unreadable file taken as empty, a path that was never collected
    taken as missing, git killed for memory taken as "not committed"). Left uncaught, it ends the
    detector with its message as the last line, which the runner stores as the cause.

    Attributes:
        cause: What could not be read, and why.
        by_agent: The agent's own doing made the evidence unreadable (links it made lead where nothing
            was collected, a file it made unreadable, objects too large for git to read): the run is
            UNDETERMINED by the agent, not by the pair or the infrastructure (docs/calibration.md,
            "Outcomes").
    """

    def __init__(self, cause: str, *, by_agent: bool = False) -> None:
        super().__init__(cause)
        self.cause = cause
        self.by_agent = by_agent
