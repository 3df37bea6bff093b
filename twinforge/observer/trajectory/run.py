"""One ATIF trajectory per run, from what its evidence folder holds (docs/observer.md, "One trajectory format").

A run folder (``runs/<run-id>/``) holds, depending on the harness:

- Mini-SWE-agent: ``trajectory.json``, its own messages (``trajectory.read``: 1.x and 2.x, every mode);
- Claude Code, Codex, OpenCode, Pi: ``agent/harness.stdout.jsonl``, the CLI's JSON events, and
  ``agent/harness.json``, which CLI ran (``harnesses/<cli>.py``); a multi-turn run has one output
  file per user turn, joined with each later turn as a user step (``trajectory.turns``);
- a scripted agent (``run --commands``): ``agent/commands.jsonl``, the runner's records
  (``harnesses/commands.py``);

and every model run has the proxy's host-side transcript ``proxy.jsonl``: its agent calls are
counted into ``extra.model_calls``, its refusals into ``extra.proxy_refusals``, and its token
counts go on the agent steps when there is one step per call. A CLI whose own output holds no step (it crashed,
or was killed before writing) is read from the transcript instead. A CLI's output is written by a
process the agent's commands share the task container with: it feeds diagnostics, never a verdict.
A folder that already holds ``trajectory.atif.json`` is read from that file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from twinforge.core.llm import describe_validation_error
from twinforge.observer.exceptions import TrajectoryError
from twinforge.observer.trajectory.atif import Agent, AtifTrajectory
from twinforge.observer.trajectory.harnesses.claude_code import read_claude_code
from twinforge.observer.trajectory.harnesses.codex import read_codex
from twinforge.observer.trajectory.harnesses.commands import command_records, read_commands
from twinforge.observer.trajectory.harnesses.opencode import read_opencode
from twinforge.observer.trajectory.harnesses.pi import read_pi
from twinforge.observer.trajectory.harnesses.proxy import read_proxy, transcript
from twinforge.observer.trajectory.read import load_document
from twinforge.observer.trajectory.to_atif import to_atif
from twinforge.observer.trajectory.tools import as_object
from twinforge.observer.trajectory.turns import TurnPart, calls_during, join_turns, read_turn, turn_parts

ATIF_FILE = "trajectory.atif.json"
STREAM = "agent/harness.stdout.jsonl"
CLI_READERS: dict[str, Callable[..., AtifTrajectory]] = {
    "claude-code": read_claude_code,
    "codex": read_codex,
    "opencode": read_opencode,
    "pi": read_pi,
}
"""The reader of each CLI's own output, by harness name."""


def json_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file (other lines skipped; a missing file reads as none)."""
    found = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if path.is_file() else []:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def split_key(key: str) -> tuple[str, str]:
    """``(name, version)`` of a harness key such as ``pi@0.84.2[bypass]`` or ``mini-swe-agent[text]``."""
    name = key.split("[", 1)[0]
    name, _, version = name.partition("@")
    return name, version


def _task(entries: list[dict[str, Any]]) -> str:
    """The task: the first user message of the first agent request in the transcript."""
    first = next((e.get("request") for e in entries if e.get("role") == "agent"), None)
    if not isinstance(first, dict):
        return ""
    for message in first.get("messages") or first.get("input") or []:
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                content = "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
            return str(content or "")
    return ""


def _with_proxy(document: AtifTrajectory, entries: list[dict[str, Any]]) -> AtifTrajectory:
    """Add the transcript's call count, refusals and per-call tokens."""
    from_proxy = read_proxy(entries)
    extra = dict(document.extra or {})
    extra["model_calls"] = from_proxy.info("model_calls", 0)
    if from_proxy.info("proxy_refusals"):
        extra["proxy_refusals"] = from_proxy.info("proxy_refusals")
    mine = [s for s in document.steps if s.source == "agent" and s.llm_call_count != 0]
    theirs = [s for s in from_proxy.steps if s.source == "agent"]
    if len(mine) == len(theirs):
        for step, call in zip(mine, theirs, strict=True):
            step.metrics = step.metrics or call.metrics
    document.extra = extra
    document.final_metrics = from_proxy.final_metrics if len(mine) == len(theirs) else document.final_metrics
    return document


def _read_cli(folder: Path, name: str, version: str, entries: list[dict[str, Any]]) -> tuple[AtifTrajectory, list[str]]:
    """A CLI run: each user turn's output read (its proxy calls when it holds no agent step), joined."""
    parts = turn_parts(_json(folder / "agent" / "harness.json"), _task(entries), STREAM)
    ends = [p.sent_at for p in parts[1:]] + [None]
    read: list[tuple[TurnPart, AtifTrajectory]] = []
    sources: list[str] = []
    for part, end in zip(parts, ends, strict=True):
        calls = calls_during(entries, part.sent_at if part.number > 1 else None, end) if len(parts) > 1 else entries
        document, from_proxy = read_turn(CLI_READERS[name], json_lines(folder / part.stream), calls, part.said, version)
        read.append((part, document))
        sources.append("proxy.jsonl" if from_proxy else part.stream)
    document = join_turns(read)
    if not any(s.source == "agent" for s in document.steps) and entries:
        return read_proxy(entries, _task(entries), document.agent), ["proxy.jsonl"]
    return document, list(dict.fromkeys(sources))


def load_run(folder: Path) -> AtifTrajectory:
    """The run's one trajectory, read from its evidence folder.

    Raises:
        TrajectoryError: The folder holds no trajectory a reader knows, or its file is invalid
            (the message names the file and the field).
    """
    if (folder / ATIF_FILE).is_file():
        saved = load_document(folder / ATIF_FILE)
        if not isinstance(saved, AtifTrajectory):
            raise TrajectoryError(f"{folder / ATIF_FILE}: not an ATIF trajectory (no ATIF schema_version)")
        return saved
    entries = transcript(folder / "proxy.jsonl")
    result = _json(folder / "result.json")
    run_id = str(result.get("run_id") or folder.name)
    key = str(_json(folder / "agent" / "harness.json").get("harness") or "")
    name, version = split_key(key)
    sources: list[str] = []
    document: AtifTrajectory | None = None
    if name in CLI_READERS:
        document, sources = _read_cli(folder, name, version, entries)
    elif (folder / "trajectory.json").is_file():
        loaded = load_document(folder / "trajectory.json")
        if isinstance(loaded, AtifTrajectory):
            document = loaded
        else:
            info = as_object(_json(folder / "trajectory.json").get("info"))
            document = to_atif(loaded, Agent(name="mini-swe-agent", version=str(info.get("mini_version") or "")))
            key = key or "mini-swe-agent"
        sources.append("trajectory.json")
    elif (folder / "agent" / "commands.jsonl").is_file():
        document = read_commands(command_records(folder / "agent" / "commands.jsonl"))
        key, sources = "scripted", ["agent/commands.jsonl"]
    if document is None:
        raise TrajectoryError(f"{folder}: no trajectory (trajectory.json, {STREAM} or agent/commands.jsonl)")
    if entries:
        document = _with_proxy(document, entries)
        sources = list(dict.fromkeys([*sources, "proxy.jsonl"]))
    document.session_id = run_id
    document.extra = {**(document.extra or {}), "harness": key or document.agent.name, "sources": sources}
    try:
        return AtifTrajectory.model_validate(document.model_dump())
    except ValidationError as exc:
        raise TrajectoryError(f"{folder}: {'; '.join(describe_validation_error(exc)[:3])}") from exc
