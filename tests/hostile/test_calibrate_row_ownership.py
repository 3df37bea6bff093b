"""Two ``calibrate`` processes on one workspace share the work; each run executes once (docs/runtime.md).

Before: the second process reset every ``running`` row to pending and ran it again, so every job
ran twice. Now a row is claimed atomically and only taken back from an owner that is gone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.lifecycle import copy_reference, mark_validated
from twinforge.core.llm.stub_server import openai_reply, stub_server
from twinforge.core.workspace import Workspace
from twinforge.runs.records import RecordsDB, records_url

pytestmark = [pytest.mark.docker, pytest.mark.slow]
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    command = ["scripts/clean.sh", SUBMIT][min(turn, 1)]
    return 200, openai_reply(f"THOUGHT: next.\n\n```mswea_bash_command\n{command}\n```")


def test_two_calibrate_processes_share_the_runs_and_run_each_once(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws")
    pair = copy_reference(ws)
    mark_validated(ws, pair)
    with stub_server(reply, delay_s=0.3) as (url, received):
        env = {
            **os.environ,
            "TWINFORGE_MODELS__CALIBRATION__BASE_URL": url,
            "TWINFORGE_MODELS__CALIBRATION__MODEL": "weak-model",
            "TWINFORGE_CALIBRATION__GRAMMAR": "false",
        }
        command = [sys.executable, "-m", "twinforge", "calibrate", str(pair), "--runs", "2", "--workers", "1", "--json"]
        first = subprocess.Popen(
            command, cwd=ws.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        second = subprocess.Popen(
            command, cwd=ws.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        outs = [p.communicate(timeout=900) for p in (first, second)]
    for proc, (out, err) in zip((first, second), outs, strict=True):
        assert proc.returncode == 0, f"stderr:\n{err}\nstdout:\n{out}"
    reports = [json.loads(out) for out, _ in outs]
    records = RecordsDB(records_url(ws))
    runs = records.runs()
    assert len(runs) == 4 and all(r.attempts == 1 for r in runs)  # each run executed exactly once
    assert sum(r["ran"] for r in reports) == 4  # between them, the two processes ran every run once
    assert all(r["errors"] == [] for r in reports)
    assert len(received) == sum(r.calls for r in runs) == 8  # no model call of a duplicate run
    assert all(len(records.calls(str(r.run_id))) == 2 for r in runs)
    for report in reports:  # both decided the pair on all four runs
        (verdict,) = report["verdicts"]
        assert verdict["complete"] and verdict["passed"], verdict
    published = {p.name for p in (ws.root / "runs").iterdir() if p.name != ".partial"}
    assert published == {str(r.run_id) for r in runs}
