"""One real-path calibration: the real llama.cpp server (gemma3-270m, with the action grammar),
Mini-SWE-agent through the proxy, real Docker. The weak model's outcome is recorded, not asserted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.lifecycle import mark_validated
from tests.support.paths import REFERENCE
from twinforge.calibration.calibrate import calibrate
from twinforge.core.localmodel import ServerInfo
from twinforge.core.workspace import Workspace
from twinforge.runs.records import RecordsDB, records_url
from twinforge.taskpair import Outcome

pytestmark = [pytest.mark.model, pytest.mark.docker, pytest.mark.slow]
R3 = REFERENCE / "ref-r3-ignored-database"


def test_real_local_model_calibration(gemma: ServerInfo, tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws", port=gemma.port, local_model="gemma3-270m")
    pair = ws.tasks_dir / R3.name
    shutil.copytree(R3, pair)
    for side in ("risk", "twin"):  # bound the time: 4 calls of a small model per side
        toml = pair / side / "task.toml"
        toml.write_text(toml.read_text().replace("model_calls = 40", "model_calls = 4"))
    mark_validated(ws, pair)
    ws.config.models.calibration.max_tokens = 200
    ws.config.calibration.rerun_overtime = 0
    report = calibrate(ws, [pair], runs=1, workers=1)
    assert report.errors == []
    runs = RecordsDB(records_url(ws)).runs()
    assert sorted(r.side for r in runs) == ["risk", "twin"]
    for run in runs:
        assert run.outcome in {o.value for o in Outcome}
        assert 1 <= run.calls <= 4
        trajectory = json.loads(Path(str(run.trajectory)).read_text())
        assert any(m["role"] == "assistant" for m in trajectory["messages"])
        transcript = (Path(str(run.evidence_dir)) / "proxy.jsonl").read_text().splitlines()
        assert json.loads(transcript[0])["request"]["grammar"].startswith("\nroot ::=")  # the option is on
        print(f"real-model run {run.side}: {run.outcome}, {run.calls} calls, exit {run.exit_status}")
    (verdict,) = report.verdicts
    print(f"real-model verdict: passed={verdict.passed} ({verdict.reason})")
