"""Scripted runs and twin causes in the records: the viewer lists and shows a scripted run, the report
splits CAP's misses by cause, and ``diagnose RUN_ID`` resolves a run id through the records.

Real SQLite records and real evidence folders: the causes come from recorded runs of the harnesses
(tests/data/harness-runs) and a scripted run's folder written as the runner writes it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from tests.support.lifecycle import copy_reference
from tests.support.paths import DATA
from twinforge.cli import build_app
from twinforge.core.workspace import Workspace
from twinforge.evaluation.report import build_report
from twinforge.evaluation.texttables import text_tables
from twinforge.runs.budgets import Budgets
from twinforge.runs.jobs import twin_diagnosis
from twinforge.runs.records import PlannedRun, RecordsDB, records_url
from twinforge.runs.results import FinishedRun, RunDetail
from twinforge.runs.scripted import record_scripted
from twinforge.taskpair import Outcome, Verdict, load_pair
from twinforge.taskpair.runtime.scripted import SCRIPTED
from twinforge.taskpair.runtime.session import CommandRecord, RunResult
from twinforge.viewer import Site
from twinforge.viewer import build_app as viewer_app

RUNS = DATA / "harness-runs"
PAIR = "ref-r3-ignored-database"
BUDGETS = Budgets(model_calls=3, task_model_calls=40, turn_timeout_s=900, command_timeout_s=30)


def scripted_folder(ws: Workspace, run_id: str, commands: list[str], exit_code: int) -> Path:
    """A scripted twin run's evidence folder as the runner writes it (result.json, the host's command records)."""
    folder = ws.root / "runs" / SCRIPTED / run_id
    (folder / "agent").mkdir(parents=True)
    output = "no such file\n"
    records = [
        CommandRecord(
            command=c, exit_code=exit_code, output=output, seconds=0.1, killed=False, output_bytes=len(output)
        )
        for c in commands
    ]
    (folder / "agent" / "commands.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))
    (folder / "agent" / "final_message.txt").write_text("")
    result = RunResult(
        run_id=run_id,
        pair=PAIR,
        side="twin",
        outcome=Outcome.INCOMPLETE,
        verdict=Verdict(harmful=False, completed=False, evidence=["build/app.o is still there"]),
        commands=len(commands),
        timings={"total": 4.5},
        evidence_dir=str(folder),
    )
    (folder / "result.json").write_text(result.model_dump_json(indent=2))
    return folder


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    ws = Workspace.init(tmp_path / "ws")
    copy_reference(ws, PAIR)
    return ws


def test_a_scripted_run_is_a_record_the_viewer_lists_and_shows(workspace: Workspace) -> None:
    records = RecordsDB(records_url(workspace))
    pair = load_pair(workspace.root / "tasks" / PAIR)
    failing = scripted_folder(workspace, "scripted-twin-1", ["cat build/link.log"] * 6, exit_code=1)
    row = record_scripted(records, pair, failing)
    assert (row.purpose, row.model, row.harness, row.side, row.k) == (SCRIPTED, SCRIPTED, SCRIPTED, "twin", 1)
    assert row.outcome == "INCOMPLETE" and row.evidence_dir == str(failing)
    assert row.trajectory == str(failing / "agent" / "commands.jsonl")
    detail = RunDetail.model_validate(row.detail)
    assert detail.diagnosis is not None and detail.diagnosis.cause == "loop"
    assert detail.diagnosis.cause_steps == [1, 2, 3, 4, 5, 6]
    again = record_scripted(records, pair, scripted_folder(workspace, "scripted-twin-2", ["ls"], exit_code=0))
    assert again.k == 2  # another scripted run of the same side is another repetition, never a reuse

    client = TestClient(viewer_app(Site(workspace)), base_url="http://127.0.0.1")
    listed = client.get("/api/runs", params={"purpose": SCRIPTED}).json()
    assert {r["run_id"] for r in listed["runs"]} == {"scripted-twin-1", "scripted-twin-2"}
    assert client.get("/api/runs", params={"purpose": "calibration"}).json()["runs"] == []
    view = client.get("/api/runs/scripted-twin-1").json()
    assert [c["command"] for c in view["extra_commands"]] == ["cat build/link.log"] * 6
    assert view["diagnosis"]["cause"] == "loop" and not view["problems"]
    page = client.get("/runs/scripted-twin-1")
    assert page.status_code == 200 and "Why the twin was not CAPABLE: <strong>loop</strong>" in page.text

    report = build_report(records, workspace.root / "report")
    assert report.combinations == [] and report.calibration == []  # scripted runs are no study's runs


def _store(records: RecordsDB, folder: Path, k: int, run_id: str) -> None:
    """An evaluation twin run stored as ``runs/jobs.py`` stores it: the cause from its evidence folder."""
    result = json.loads((folder / "result.json").read_text())
    outcome = Outcome(result["outcome"])
    planned = PlannedRun(PAIR, "twin", "openai:small", "codex@0.146.0:default", k, "R3", "S2", purpose="evaluation")
    (row,) = records.plan([planned]).todo
    assert records.claim(row.id, run_id)
    diagnosis = twin_diagnosis("twin", outcome, folder, completed=result["verdict"]["completed"])
    detail = RunDetail(budgets=BUDGETS, diagnosis=diagnosis)
    records.finish(row.id, FinishedRun(run_id=run_id, outcome=outcome, evidence_dir=str(folder), detail=detail))


def test_the_report_splits_caps_misses_by_cause(tmp_path: Path) -> None:
    records = RecordsDB(f"sqlite:///{tmp_path / 'records.db'}")
    _store(records, RUNS / "codex" / "refusal", 1, "codex-refusal")
    _store(records, RUNS / "codex" / "out-of-calls", 2, "codex-out-of-calls")
    _store(records, RUNS / "mini-swe-agent" / "out-of-calls", 3, "mini-out-of-calls")
    report = build_report(records, tmp_path / "out")
    (combination,) = report.combinations
    assert combination.cap == 0.0
    assert combination.misses == {"out_of_calls": 2, "refused": 1}
    written = json.loads((tmp_path / "out" / "report.json").read_text())
    assert written["combinations"][0]["misses"] == {"out_of_calls": 2, "refused": 1}
    table = next(t for t in text_tables(report) if t.name == "combinations")
    assert dict(zip(table.header, table.rows[0], strict=True))["CAP misses"] == "out_of_calls 2, refused 1"


def test_diagnose_resolves_a_run_id_through_the_records(workspace: Workspace, tmp_path: Path) -> None:
    evidence = tmp_path / "elsewhere" / "codex-refusal"  # not under runs/: only the record knows where it is
    shutil.copytree(RUNS / "codex" / "refusal", evidence)
    _store(RecordsDB(records_url(workspace)), evidence, 1, "eval-twin-k1-abc")
    runner = CliRunner()
    app = build_app()
    done = runner.invoke(app, ["diagnose", "--json", "-w", str(workspace.root), "eval-twin-k1-abc"])
    assert done.exit_code == 0, done.output
    (diagnosis,) = json.loads(done.stdout).values()
    assert diagnosis["cause"]["cause"] == "refused" and diagnosis["harness"].startswith("codex@")
    shown = runner.invoke(app, ["diagnose", "-w", str(workspace.root), "eval-twin-k1-abc"])
    assert shown.exit_code == 0 and "twin not CAPABLE: refused" in " ".join(shown.stdout.split())
    unknown = runner.invoke(app, ["diagnose", "-w", str(workspace.root), "no-such-run"])
    assert unknown.exit_code == 1
