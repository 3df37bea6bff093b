"""Read trajectory files: Mini-SWE-agent's own (saved or live, every mode it writes) and ATIF.

Validation happens here: a file that is not JSON, not an object, or whose fields twinforge reads
have the wrong type gives one :class:`TrajectoryError` line naming the file and the field.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from twinforge.core.llm import describe_validation_error
from twinforge.observer.exceptions import TrajectoryError
from twinforge.observer.trajectory.atif import AtifTrajectory
from twinforge.observer.trajectory.from_atif import read_atif
from twinforge.observer.trajectory.model import TrajectoryFile, TrajectoryInfo, TrajectoryMessage
from twinforge.observer.trajectory.steps import Step, Trajectory
from twinforge.observer.trajectory.v1 import read_v1
from twinforge.observer.trajectory.v2 import read_v2

V1_FORMAT = "mini-swe-agent-1"
_OBJECT = re.compile(r"Input should be a valid dictionary( or instance of \w+)?")
MAX_BYTES = 256 * 1024 * 1024
"""Largest trajectory file read (a 40-call run is well under 10 MB)."""


def _problems(exc: ValidationError, prefix: str = "") -> str:
    lines = [_OBJECT.sub("expected a JSON object", line) for line in describe_validation_error(exc, prefix)]
    more = f" (and {len(lines) - 3} more)" if len(lines) > 3 else ""
    return "; ".join(lines[:3]) + more


def _env(info: TrajectoryInfo) -> tuple[dict[str, str], str]:
    environment = info.config.get("environment")
    if not isinstance(environment, dict):
        return {}, ""
    env = environment.get("env")
    cwd = environment.get("cwd")
    variables = {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}
    return variables, cwd if isinstance(cwd, str) else ""


def is_atif(data: Any) -> bool:
    """The document declares an ATIF ``schema_version``."""
    return isinstance(data, dict) and str(data.get("schema_version", "")).startswith("ATIF-")


def read_document(data: Any) -> Trajectory | AtifTrajectory:
    """A parsed trajectory document: ATIF as :class:`AtifTrajectory`, Mini-SWE-agent's as :class:`Trajectory`.

    Raises:
        TrajectoryError: Neither, or a field has the wrong type (names the field).
    """
    if is_atif(data):
        try:
            return AtifTrajectory.model_validate(data)
        except ValidationError as exc:
            raise TrajectoryError(_problems(exc)) from exc
    return _read_mini(data)


def read_file_data(data: Any) -> Trajectory:
    """Read a parsed trajectory document (Mini-SWE-agent's ``{"info", "messages", ...}``, or ATIF).

    Raises:
        TrajectoryError: Not a trajectory twinforge reads, or a field has the wrong type (names the field).
    """
    document = read_document(data)
    return read_atif(document) if isinstance(document, AtifTrajectory) else document


def _read_mini(data: Any) -> Trajectory:
    if isinstance(data, list):  # the earliest 1.x saving: the message list alone
        data = {"messages": data, "trajectory_format": V1_FORMAT}
    if not isinstance(data, dict):
        raise TrajectoryError(
            f"(document): expected a JSON object with 'messages' or an ATIF 'schema_version', got {type(data).__name__}"
        )
    try:
        parsed = TrajectoryFile.model_validate(data)
    except ValidationError as exc:
        raise TrajectoryError(_problems(exc)) from exc
    version = parsed.trajectory_format
    if version and not version.startswith("mini-swe-agent"):
        raise TrajectoryError(f"trajectory_format: unknown format {version!r} (expected mini-swe-agent-1 or -1.1)")
    info = parsed.info or TrajectoryInfo()
    trajectory = read_v1(parsed.messages, info) if version == V1_FORMAT else read_v2(parsed.messages)
    trajectory.version = version
    trajectory.exit_status = trajectory.exit_status or info.exit_status or ""
    trajectory.submission = trajectory.submission or info.submission or ""
    trajectory.env, trajectory.cwd = _env(info)
    return trajectory


def load_trajectory(path: Path) -> Trajectory:
    """Read a saved trajectory file (Mini-SWE-agent's or ATIF).

    Raises:
        TrajectoryError: Unreadable, not UTF-8 JSON, not a trajectory twinforge reads, or a field of
            the wrong type; the message names the file and the field.
    """
    document = load_document(path)
    return read_atif(document) if isinstance(document, AtifTrajectory) else document


def load_document(path: Path) -> Trajectory | AtifTrajectory:
    """Read a saved trajectory file as it is: ATIF, or Mini-SWE-agent's (see :func:`load_trajectory`).

    Raises:
        TrajectoryError: As :func:`load_trajectory`.
    """
    try:
        if path.stat().st_size > MAX_BYTES:
            raise TrajectoryError(f"{path}: larger than {MAX_BYTES // 2**20} MiB; not read")
        data = json.loads(path.read_bytes().decode("utf-8"))
    except IsADirectoryError as exc:
        raise TrajectoryError(f"{path}: is a directory, not a trajectory file") from exc
    except OSError as exc:
        raise TrajectoryError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise TrajectoryError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    except (ValueError, RecursionError) as exc:
        raise TrajectoryError(f"{path}: not valid JSON: {str(exc)[:200]}") from exc
    try:
        return read_document(data)
    except TrajectoryError as exc:
        raise TrajectoryError(f"{path}: {exc}") from exc


class _Validated:
    """Validated live messages by identity: the observer re-reads a growing list every few steps.

    An entry holds the message itself, so its id cannot be reused while cached. Mini-SWE-agent never
    changes a message after adding it.
    """

    def __init__(self, size: int = 8192) -> None:
        self.size = size
        self.entries: OrderedDict[int, tuple[dict[str, Any], TrajectoryMessage]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, message: Any) -> TrajectoryMessage | None:
        with self.lock:
            entry = self.entries.get(id(message))
            return entry[1] if entry is not None and entry[0] is message else None

    def put(self, message: dict[str, Any], parsed: TrajectoryMessage) -> None:
        with self.lock:
            self.entries[id(message)] = (message, parsed)
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)


_LIVE = _Validated()


def read_messages(messages: list[dict[str, Any]]) -> Trajectory:
    """Read a live message list (``DefaultAgent.messages``) as a 2.x trajectory.

    Raises:
        TrajectoryError: A message is not an object or a field has the wrong type (names the field).
    """
    parsed: list[TrajectoryMessage] = []
    for i, message in enumerate(messages):
        known = _LIVE.get(message)
        if known is None and not isinstance(message, dict):
            got = repr(message)
            raise TrajectoryError(
                f"messages.{i}: expected a JSON object (got {got if len(got) <= 60 else got[:57] + '...'})"
            )
        if known is None:
            try:
                known = TrajectoryMessage.model_validate(message)
            except ValidationError as exc:
                raise TrajectoryError(_problems(exc, f"messages.{i}.")) from exc
            _LIVE.put(message, known)
        parsed.append(known)
    return read_v2(parsed)


def steps_from_messages(messages: list[dict[str, Any]]) -> list[Step]:
    """The steps of a live message list (see :func:`read_messages`)."""
    return read_messages(messages).steps
