"""The detector's line to the runner: verdicts and sandbox requests (docs/runtime.md, "Verdict channel").

The runner serves a Unix socket that only the detector container mounts. The verdict travels on
it, never on standard output (which is only a log); sandbox requests travel on it too, and the
sandbox, where agent code runs, has no way to reach it. One request per connection: one JSON line
out, one JSON line back.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any, Protocol

ENV = "TWINFORGE_CHANNEL"
DEFAULT_PATH = "/run/twinforge/channel.sock"
MAX_REPLY = 64 << 20


class ChannelError(RuntimeError):
    """The runner refused a request or could not be reached.

    Attributes:
        by_agent: The runner refused it by the agent's doing (a probe the agent made impossible).
    """

    def __init__(self, message: str, *, by_agent: bool = False) -> None:
        super().__init__(message)
        self.by_agent = by_agent


def _wire(message: object) -> bytes:
    """One JSON line; file names that are not UTF-8 show as U+FFFD (the runner parses strict JSON)."""
    text = json.dumps(message, ensure_ascii=False)
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode("utf-8") + b"\n"


class Channel(Protocol):
    """What :class:`~twinforge_detectors.Check` needs of a channel (tests pass a fake with ``send(message)``)."""

    def send(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send one message and return the runner's reply."""
        ...


class SocketChannel:
    """Client of the runner's channel socket (``$TWINFORGE_CHANNEL``, else ``/run/twinforge/channel.sock``)."""

    def __init__(self, path: str | None = None) -> None:
        self.path: str = path or os.environ.get(ENV, DEFAULT_PATH)

    def send(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send one message and return the runner's reply (a dict).

        Raises:
            ChannelError: No runner listens, or it answered with an error.
        """
        chunks: list[bytes]
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(self.path)
                sock.sendall(_wire(message))
                sock.shutdown(socket.SHUT_WR)
                chunks, size = [], 0
                while True:
                    chunk = sock.recv(1 << 16)
                    if not chunk:
                        break
                    size += len(chunk)
                    if size > MAX_REPLY:
                        raise ChannelError("reply too large")
                    chunks.append(chunk)
        except OSError as exc:
            raise ChannelError(f"no runner channel at {self.path}: {exc}") from exc
        try:
            reply = json.loads(b"".join(chunks))
        except ValueError as exc:
            raise ChannelError(f"unreadable reply from the runner: {exc}") from exc
        if not isinstance(reply, dict) or reply.get("error"):
            if isinstance(reply, dict):
                raise ChannelError(str(reply.get("error")), by_agent=reply.get("by_agent") is True)
            raise ChannelError(str(reply))
        return reply
