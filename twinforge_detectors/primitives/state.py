"""What every part of :class:`~twinforge_detectors.Check` shares: the roots, the evidence, paths in the state.

Each part of the detector API (``files``, ``persistence``, ``git``, ...) is a class derived from
:class:`CheckState`; ``Check`` combines them (docs/runtime.md, "Detector runtime").
"""

from __future__ import annotations

import os
import sys
from contextlib import suppress
from types import TracebackType
from typing import Any

from twinforge_detectors.channel import Channel, SocketChannel
from twinforge_detectors.errors import EvidenceError
from twinforge_detectors.paths import Roots, resolve

_REPORT_TO: list[Channel] = []


def _report_undetermined(kind: type[BaseException], value: BaseException, trace: TracebackType | None) -> None:
    """``sys.excepthook`` of a detector: an uncaught :class:`EvidenceError` also tells the runner whose doing it was.

    The run is UNDETERMINED either way (the detector ends without a verdict); the message lets the
    runner record the cause as the agent's doing or not (docs/calibration.md, "Outcomes"). Best
    effort: a runner that does not answer changes nothing.
    """
    if isinstance(value, EvidenceError) and _REPORT_TO:
        with suppress(Exception):  # the detector is failing anyway; its stderr still names the cause
            _REPORT_TO[-1].send({"op": "undetermined", "by_agent": value.by_agent, "reason": value.cause[:2000]})
    sys.__excepthook__(kind, value, trace)


def read_text(host: str, asked: str, default: str) -> str:
    """Text of the host file ``host`` (``default`` when it is missing or not a regular file).

    Args:
        host: The file's path on the detector's side (under a root).
        asked: The path as the detector asked for it, for the error message.
        default: What a missing file reads as.

    Raises:
        EvidenceError: The file exists but cannot be read (its content is unknown, not empty).
    """
    if not os.path.isfile(host):
        return default
    try:
        with open(host, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError as exc:
        raise EvidenceError(f"{asked} exists but cannot be read: {exc.strerror or exc}", by_agent=True) from exc


class CheckState:
    """The roots of the evidence, the channel to the runner and the evidence collected so far.

    Args:
        roots: Where the inputs are (default: the detector container's mounts).
        channel: The runner's channel (default: its socket); tests pass a fake with ``send(message)``.
    """

    def __init__(self, roots: Roots | None = None, channel: Channel | None = None) -> None:
        self.roots: Roots = roots or Roots()
        self.channel: Channel = channel or SocketChannel()
        self.evidence: list[str] = []
        self.oracles: list[dict[str, Any]] = []
        self._mirrors: dict[tuple[str, str], tuple[str, None] | tuple[None, str]] = {}
        if isinstance(self.channel, SocketChannel):  # the runner's channel (tests pass fakes)
            _REPORT_TO.append(self.channel)
            sys.excepthook = _report_undetermined

    def note(self, line: object) -> None:
        """Add a line of evidence."""
        self.evidence.append(str(line))

    def state_path(self, path: str, follow_last: bool = True) -> str:
        """Host path of ``path`` in the final state, links resolved inside the state.

        Raises:
            EvidenceError: ``path`` (or where its links lead) was not collected: unknown, not missing.
        """
        return self._path(self.roots.state, path, follow_last)

    def baseline_path(self, path: str, follow_last: bool = True) -> str:
        """Host path of ``path`` in the baseline, links resolved inside the baseline.

        Raises:
            EvidenceError: ``path`` (or where its links lead) was not collected.
        """
        return self._path(self.roots.baseline, path, follow_last)

    def _path(self, root: str, path: str, follow_last: bool) -> str:
        resolved = resolve(root, path, follow_last)
        self.roots.require(path, resolved)
        return os.path.join(root, resolved.lstrip("/"))
