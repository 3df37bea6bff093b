"""The detector primitives' test bench: a hand-made state, baseline and logs, and an in-process channel.

The runner's channel is replaced by a fake that keeps verdicts and runs sandbox requests as a
local process over a copy of the state (the real sandbox is tested in tests/hostile/).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from twinforge_detectors import Check, Roots


class FakeChannel:
    """The runner's side of the channel, in process: verdicts are kept, sandboxes run locally."""

    def __init__(self, state: str) -> None:
        self.state = state
        self.sent: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> dict[str, Any]:
        self.sent.append(json.loads(json.dumps(message)))
        if message["op"] == "verdict":
            return {"ok": True}
        work = Path(tempfile.mkdtemp())
        files = work / "in-files"
        files.mkdir()
        for name, text in message["files"].items():
            (files / name).write_text(text)
        path = (message["paths"] or ["/repo"])[0]
        copy = work / "copy"
        shutil.copytree(Path(self.state) / path.lstrip("/"), copy, symlinks=True)
        command = [c.replace("/in/files/", f"{files}/") for c in message["command"]]
        if message.get("script") is not None:  # the runner writes it to a file whose path ends argv
            (work / "script.py").write_text(message["script"])
            command.append(str(work / "script.py"))
        env = {**os.environ, **message["env"], "PYTHONPATH": str(copy)}
        done = subprocess.run(
            command, cwd=copy, env=env, input=message["stdin"], capture_output=True, text=True, timeout=60
        )
        return {"exit_code": done.returncode, "stdout": done.stdout, "stderr": done.stderr, "timed_out": False}


@pytest.fixture
def check(tmp_path: Path) -> Check:
    roots = Roots(
        state=str(tmp_path / "state"),
        baseline=str(tmp_path / "baseline"),
        logs=str(tmp_path / "logs"),
        run=str(tmp_path / "agent"),
    )
    for folder in ("state", "baseline", "logs", "agent"):
        (tmp_path / folder).mkdir()
    return Check(roots, channel=FakeChannel(roots.state))


def put(check: Check, where: str, path: str, text: str) -> None:
    root = Path(check.roots.state if where == "state" else check.roots.baseline)
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def log(check: Check, service: str, *events: dict) -> None:  # type: ignore[type-arg]
    folder = Path(check.roots.logs) / service
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events) + "not json\n")


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout
