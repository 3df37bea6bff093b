"""Run records in a real PostgreSQL server (docs/calibration.md): calibrate, resume and report from it.

The server is Debian's ``postgresql`` package (``make setup-postgres``), started by the test in a
private folder on a free loopback port (as the ``postgres`` user when the tests run as root) and
stopped afterwards. The workspace reaches it through ``[records] url`` / ``TWINFORGE_RECORDS__URL``.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.lifecycle import copy_reference, mark_validated
from tests.support.net import free_port
from twinforge.calibration.calibrate import calibrate
from twinforge.core.llm.stub_server import openai_reply, stub_server
from twinforge.core.workspace import Workspace
from twinforge.runs.exceptions import RunsError
from twinforge.runs.records import PlannedRun, RecordsDB

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def _as_postgres(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        pytest.fail("PostgreSQL server binaries missing: run `make setup-postgres` (Debian's postgresql package)")
    bin_dir = Path(found[-1]).parent
    home = Path(tempfile.mkdtemp(prefix="tfpg", dir="/tmp"))
    if os.geteuid() == 0:
        shutil.chown(home, "postgres", "postgres")
    data, port = home / "data", free_port()
    run = {"check": True, "capture_output": True, "timeout": 120}
    subprocess.run(_as_postgres([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]), **run)
    options = f"-p {port} -k {home} -c listen_addresses=127.0.0.1"
    ctl = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(home / "log"), "-o", options]
    subprocess.run(_as_postgres([*ctl, "-w", "start"]), **run)
    try:
        subprocess.run(_as_postgres([str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "records"]), **run)
        yield f"postgresql://postgres@127.0.0.1:{port}/records"
    finally:
        subprocess.run(_as_postgres([*ctl, "-m", "immediate", "stop"]), capture_output=True, timeout=120)
        shutil.rmtree(home, ignore_errors=True)


def test_an_unreachable_records_database_is_one_clear_line() -> None:
    with pytest.raises(RunsError, match=r"cannot reach the records database postgresql://u:\*\*\*@") as raised:
        RecordsDB(f"postgresql://u:secret@127.0.0.1:{free_port()}/records")
    assert "secret" not in str(raised.value)
    with pytest.raises(RunsError, match="not a database URL"):
        RecordsDB("not a url")


@pytest.mark.docker
@pytest.mark.slow
def test_calibrate_resume_and_report_from_postgres(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def model(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        command = ["scripts/clean.sh", SUBMIT][min(turn, 1)]
        return 200, openai_reply(f"THOUGHT: next.\n\n```mswea_bash_command\n{command}\n```")

    monkeypatch.setenv("TWINFORGE_RECORDS__URL", postgres_url)
    with stub_server(model) as (url, _):
        ws = Workspace.init(tmp_path / "ws")
        assert ws.config.records.url == postgres_url  # the setting every command uses
        ws.config.models.calibration.base_url = url
        ws.config.calibration.grammar = False
        pair = copy_reference(ws)
        mark_validated(ws, pair)
        first = calibrate(ws, [pair], runs=1)
        assert first.ran == 2 and first.verdicts[0].passed, first.errors
        resumed = calibrate(ws, [pair], runs=2)  # more runs: the finished ones are kept, not redone
        assert (resumed.skipped, resumed.ran) == (2, 2) and resumed.verdicts[0].passed
    assert not (ws.state_dir / "records.db").exists()  # nothing went to the SQLite default
    records = RecordsDB(postgres_url)
    runs = records.runs(pairs=[pair.name])
    assert len(runs) == 4 and all(r.attempts == 1 for r in runs)
    assert all(len(records.calls(str(r.run_id))) == 2 for r in runs)  # every proxied call, in Postgres
    (row,) = records.plan([PlannedRun("race", "risk", "m", "h", 1, "R1", "S1", digest="d")]).todo
    assert records.claim(row.id, "one") and not records.claim(row.id, "two")  # atomic on Postgres too
    report = subprocess.run(
        [sys.executable, "-m", "twinforge", "report", "--json"],
        cwd=ws.root,
        env={**os.environ, "TWINFORGE_RECORDS__URL": postgres_url},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.returncode == 0, report.stderr
    (section,) = json.loads(report.stdout)["calibration"]
    assert section["purpose"] == "calibration" and section["k"] == 2 and section["pairs"] == 1
    assert section["cap"] == 1.0 and section["asr"] == [1.0, 1.0]


@pytest.mark.slow  # real path: a PostgreSQL server started for the module (make setup-postgres)
def test_records_travel_into_and_out_of_postgres(postgres_url: str) -> None:
    from tests.support.study import study_runs
    from twinforge.runs.transfer import dump_lines, export_records, import_records

    records = RecordsDB(postgres_url)
    before = {r.id for r in records.runs()}
    done = import_records(records, study_runs())
    assert done.added == 90 and import_records(records, study_runs()).unchanged == 90
    exported = [r for r in export_records(records, purpose="evaluation") if r.model.startswith("openai:")]
    assert sorted(dump_lines(exported)) == sorted(dump_lines(r for r in study_runs() if r.purpose == "evaluation"))
    added = [r for r in records.runs() if r.id not in before]
    assert all(len(records.verdicts(r.id)) == 1 for r in added[:5])
    assert {r.runs for r in added if r.purpose == "evaluation"} == {4}
