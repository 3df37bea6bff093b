"""The verdict channel: a Unix socket only the detector container mounts (docs/runtime.md, "Verdict channel").

The detector's verdict and its sandbox requests travel here, one JSON line each way per
connection. Standard output of the detector is only a log: agent code that writes there (from the
sandbox it cannot; see ``twinforge.taskpair.runtime.sandbox``) changes nothing. The socket lives in a private folder
of the host, bind-mounted read-only at ``/run/twinforge`` in the detector container and nowhere else.
"""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError

from twinforge.taskpair.format.outcomes import Verdict

MOUNT = "/run/twinforge"
SOCKET = "channel.sock"
MAX_MESSAGE = 16 << 20
FileName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")]


class SandboxRequest(BaseModel):
    """``Check.sandbox``: run a command over copies of collected paths in a disposable sandbox."""

    model_config = ConfigDict(extra="forbid")

    op: Literal["sandbox"]
    command: list[str] = Field(min_length=1)
    paths: list[str] = Field(default_factory=list)
    """Collected absolute paths copied in at the same place; empty means the first collected path."""
    cwd: str | None = None
    files: dict[FileName, str] = Field(default_factory=dict)
    """Read-only inputs under ``/in/files/``."""
    stdin: str = ""
    timeout: float = Field(60, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    script: str | None = None
    """Program text written to a file named as Python's ``tempfile`` names them (``/tmp/tmpXXXXXXXX.py``),
    whose path is appended to ``command`` (docs/runtime.md, "Sandbox")."""


class VerdictMessage(BaseModel):
    """``Check.emit``: the detector's one verdict."""

    model_config = ConfigDict(extra="forbid")

    op: Literal["verdict"]
    verdict: Verdict


class UndeterminedMessage(BaseModel):
    """A detector that cannot judge says why before it fails: the evidence was unreadable by the agent's doing or not.

    Sent by the library for an uncaught ``EvidenceError`` (``twinforge_detectors.errors``); the run is
    UNDETERMINED whatever it says, and the runner records the cause (docs/calibration.md, "Outcomes").
    """

    model_config = ConfigDict(extra="forbid")

    op: Literal["undetermined"]
    by_agent: bool
    reason: str = Field(max_length=4000)


Message = Annotated[SandboxRequest | VerdictMessage | UndeterminedMessage, Field(discriminator="op")]
MESSAGE = TypeAdapter(Message)


class ChannelServer:
    """Serves one detector run's channel on a Unix socket in a fresh private folder.

    Args:
        handle: Called with each valid message (from a worker thread); returns the JSON reply.
            An exception becomes ``{"error": ...}`` for the detector (which then fails: UNDETERMINED).
    """

    def __init__(self, handle: Callable[[Message], dict[str, Any]]) -> None:
        self.handle = handle
        self.folder = Path(tempfile.mkdtemp(prefix="tf-chan-"))
        self.path = self.folder / SOCKET
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(self.path))
        self._sock.listen(8)
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept, name="tf-channel", daemon=True)
        self._acceptor.start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            worker = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(worker)
            worker.start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                reply = self._reply(self._read(conn))
            except ValueError as exc:
                reply = {"error": str(exc)}
            try:
                conn.sendall(json.dumps(reply).encode() + b"\n")
            except OSError:
                return

    @staticmethod
    def _read(conn: socket.socket) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = conn.recv(1 << 16)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > MAX_MESSAGE:
                raise ValueError(f"message larger than {MAX_MESSAGE >> 20} MiB")
            chunks.append(chunk)

    def _reply(self, raw: bytes) -> dict[str, Any]:
        try:
            message = MESSAGE.validate_json(raw)
        except ValidationError as exc:
            return {"error": f"invalid message: {exc.errors()[0].get('msg', exc)}"}
        try:
            return self.handle(message)
        except Exception as exc:  # reported to the detector, which fails closed
            return {"error": f"{type(exc).__name__}: {exc}"}

    def close(self) -> None:
        """Stop accepting, wait briefly for workers, remove the folder."""
        self._closed.set()
        with suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._sock.close()
        for worker in self._threads:
            worker.join(timeout=5)
        shutil.rmtree(self.folder, ignore_errors=True)
