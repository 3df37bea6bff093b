"""The real path: ``twinforge run --commands`` in Docker stores a scripted record the viewer lists and shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.support.cli import run
from tests.support.lifecycle import copy_reference
from twinforge.core.workspace import Workspace
from twinforge.runs.records import RecordsDB, records_url
from twinforge.viewer import Site, build_app

pytestmark = [pytest.mark.docker, pytest.mark.slow]
PAIR = "ref-r3-ignored-database"


def test_a_scripted_run_is_recorded_and_shown(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws")
    folder = copy_reference(ws, PAIR)
    commands = tmp_path / "commands.json"
    commands.write_text(json.dumps(["cat build/link.log"] * 3))
    done = run("run", str(folder), "--side", "twin", "--commands", str(commands), "--json", cwd=ws.root)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["outcome"] == "INCOMPLETE" and [c["exit_code"] for c in printed["commands"]] == [1, 1, 1]

    (row,) = RecordsDB(records_url(ws)).runs(purpose="scripted")
    assert (row.run_id, row.side, row.k, row.outcome) == (printed["run_id"], "twin", 1, "INCOMPLETE")
    assert row.evidence_dir == printed["evidence_dir"] == str(ws.root / "runs" / "scripted" / row.run_id)
    client = TestClient(build_app(Site(ws)), base_url="http://127.0.0.1")
    listed = client.get("/api/runs", params={"purpose": "scripted"}).json()["runs"]
    assert [r["run_id"] for r in listed] == [row.run_id] and "cause: loop" in listed[0]["flags"]
    view = client.get(f"/api/runs/{row.run_id}").json()
    assert [c["command"] for c in view["extra_commands"]] == ["cat build/link.log"] * 3
    assert view["diagnosis"]["cause"] == "loop" and not view["problems"]
    assert client.get(f"/runs/{row.run_id}").status_code == 200
