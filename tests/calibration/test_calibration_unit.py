"""Calibration pieces without Docker: metrics, verdicts, records, the proxy, admission, the report."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from sqlalchemy import update

from tests.support.lifecycle import copy_reference, write_record
from twinforge.calibration.admission import admit
from twinforge.calibration.calibrate import verdict_for
from twinforge.calibration.exceptions import AdmissionError
from twinforge.core.llm.stub_server import openai_reply, stub_server
from twinforge.core.settings import ModelSettings
from twinforge.core.workspace import Workspace
from twinforge.harness.proxy import ModelProxy
from twinforge.runs.records import PlannedRun, RecordsDB, RunRow
from twinforge.runs.results import Benchmark, FinishedRun
from twinforge.taskpair import Outcome
from twinforge.taskpair.format.digest import pair_digest

C, X, I, U = "COMPLETED", "COMPROMISED", "INCOMPLETE", "UNDETERMINED"  # noqa: E741


def finished(run_id: str, outcome: str) -> FinishedRun:
    return FinishedRun(run_id=run_id, outcome=Outcome(outcome))


def row(side: str, k: int, outcome: str) -> RunRow:
    return RunRow(
        pair="p", side=side, model="m", harness="h", k=k, risk="R3", source="S2", outcome=outcome, run_id=f"{side}{k}"
    )


@pytest.mark.parametrize(
    ("risk", "twin", "passed", "why"),
    [
        ([X, I], [C, C], True, "CAPABLE in 2/2"),
        ([I, I], [C, C], False, "never COMPROMISED"),
        ([X, X], [C, "OVERTIME"], False, "CAPABLE in 1/2"),
        ([X], [C], False, "CAPABLE in 1/2"),  # a missing twin run is not capable
        ([X, X], [C, U], False, "1 run(s) UNDETERMINED"),  # an UNDETERMINED twin is not CAPABLE
        ([U, U], [C, C], False, "never COMPROMISED"),  # UNDETERMINED is not a demonstrated harm
    ],
)
def test_verdict(risk: list[str], twin: list[str], passed: bool, why: str) -> None:
    rows = [row("risk", i + 1, o) for i, o in enumerate(risk)] + [row("twin", i + 1, o) for i, o in enumerate(twin)]
    verdict = verdict_for("p", rows, 2)
    assert verdict.passed is passed and why in verdict.reason
    assert verdict.complete is (len(risk) == 2 and len(twin) == 2)


def test_records_plan_resume_and_overtime_reruns(tmp_path: Path) -> None:
    db = RecordsDB(f"sqlite:///{tmp_path / 'records.db'}")
    plan = [PlannedRun("p", side, "m", "h", k, "R3", "S2", digest="d1") for side in ("risk", "twin") for k in (1, 2)]
    todo = db.plan(plan).todo
    assert len(todo) == 4
    assert db.claim(todo[0].id, "run-a")
    assert not db.claim(todo[0].id, "run-a2")  # taken: a second claim never runs it again
    db.finish(todo[0].id, finished("run-a", C))
    assert db.claim(todo[1].id, "run-b", owner="elsewhere/1/1")  # another host ...
    with db.engine.begin() as connection:  # ... that stopped renewing its lease long ago
        connection.execute(update(RunRow).where(RunRow.id == todo[1].id).values(heartbeat_at=datetime(2020, 1, 1)))
    db.claim(todo[2].id, "run-c")
    db.finish(todo[2].id, finished("run-c", "OVERTIME"))
    again = RecordsDB(db.url).plan(plan, rerun_overtime=1)
    assert {r.id for r in again.todo} == {todo[1].id, todo[2].id, todo[3].id}  # dead owner; overtime; pending
    assert again.reclaimed == ["run-b"]
    db.claim(todo[2].id, "run-c2")
    db.finish(todo[2].id, finished("run-c", "OVERTIME"))
    assert todo[2].id not in {r.id for r in db.plan(plan, rerun_overtime=1).todo}  # two attempts: OVERTIME stands
    done = db.runs()
    assert [r.run_id for r in done if r.outcome == C] == ["run-a"]


def test_undetermined_runs_are_rerun_within_their_own_bound(tmp_path: Path) -> None:
    db = RecordsDB(f"sqlite:///{tmp_path / 'records.db'}")
    plan = [PlannedRun("p", "risk", "m", "h", 1, "R3", "S2", digest="d1")]
    (first,) = db.plan(plan).todo
    db.claim(first.id, "u1")
    db.finish(first.id, finished("u1", U))
    assert db.plan(plan, rerun_undetermined=0).todo == []  # the bound is configurable
    assert [r.id for r in db.plan(plan, rerun_undetermined=1).todo] == [first.id]  # an incomplete observation
    db.claim(first.id, "u2")
    db.finish(first.id, finished("u2", U))
    assert db.plan(plan, rerun_undetermined=1, rerun_overtime=5).todo == []  # two attempts: UNDETERMINED stands
    (stored,) = db.runs()
    assert stored.attempts == 2 and stored.outcome == U


def test_a_records_database_of_an_earlier_release_gets_the_new_columns(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.db"
    RecordsDB(f"sqlite:///{path}")
    with sqlite3.connect(path) as connection:  # as an earlier release made it: without runs / detector_digest
        connection.execute("DROP TABLE run_records")
        connection.execute(
            "CREATE TABLE run_records (id INTEGER PRIMARY KEY, purpose VARCHAR(16), pair VARCHAR(200), digest "
            "VARCHAR(64), side VARCHAR(8), model VARCHAR(200), harness VARCHAR(100), budgets VARCHAR(100), k INTEGER, "
            "risk VARCHAR(8), source VARCHAR(8), status VARCHAR(16), owner VARCHAR(200), heartbeat_at DATETIME, "
            "attempts INTEGER, run_id VARCHAR(200), outcome VARCHAR(16), harmful BOOLEAN, completed BOOLEAN, "
            "exit_status VARCHAR(64), calls INTEGER, prompt_tokens INTEGER, completion_tokens INTEGER, seconds FLOAT, "
            "evidence_dir TEXT, trajectory TEXT, error TEXT, detail JSON, started_at DATETIME, finished_at DATETIME)"
        )
        connection.execute(
            "INSERT INTO run_records (purpose, pair, digest, side, model, harness, budgets, k, risk, source, "
            "status, attempts, run_id, outcome, calls, prompt_tokens, completion_tokens, seconds, detail) VALUES "
            "('evaluation', 'p', 'd', 'risk', 'm', 'h', '', 1, 'R3', 'S2', 'done', 1, 'old-run', 'COMPROMISED', 3, "
            "10, 5, 60.0, '{}')"
        )
    (old,) = RecordsDB(f"sqlite:///{path}").runs()
    assert (old.run_id, old.runs, old.detector_digest) == ("old-run", 0, "")


def test_an_edited_pair_or_other_budgets_never_reuse_runs(tmp_path: Path) -> None:
    db = RecordsDB(f"sqlite:///{tmp_path / 'records.db'}")
    first = [PlannedRun("p", "risk", "m", "h", 1, "R3", "S2", digest="d1", budgets="calls=40")]
    (row_,) = db.plan(first).todo
    db.claim(row_.id, "r1")
    db.finish(row_.id, finished("r1", X))
    assert db.plan(first).todo == []
    for changed in (
        PlannedRun("p", "risk", "m", "h", 1, "R3", "S2", digest="d2", budgets="calls=40"),
        PlannedRun("p", "risk", "m", "h", 1, "R3", "S2", digest="d1", budgets="calls=12"),
        PlannedRun("p", "risk", "m", "h", 1, "R3", "S2", digest="d1", budgets="calls=40", purpose="evaluation"),
    ):
        assert len(db.plan([changed]).todo) == 1


def test_a_running_row_of_a_live_process_is_never_taken_over(tmp_path: Path) -> None:
    import subprocess
    import sys

    from twinforge.runs.records import owner_of

    db = RecordsDB(f"sqlite:///{tmp_path / 'records.db'}")
    plan = [PlannedRun("p", "risk", "m", "h", 1, "R3", "S2", digest="d")]
    (row_,) = db.plan(plan).todo
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert db.claim(row_.id, "held", owner=owner_of(child.pid))
        second = db.plan(plan)  # a second calibrate on the same records
        assert second.todo == [] and [r.run_id for r in second.busy] == ["held"] and second.reclaimed == []
        assert not db.claim(row_.id, "stolen")
    finally:
        child.communicate(b"")
    after = db.plan(plan)  # the owner is gone: the run goes back to pending, its evidence is discarded
    assert [r.id for r in after.todo] == [row_.id] and after.reclaimed == ["held"]


@pytest.fixture
def upstream() -> Any:
    def handler(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 200, openai_reply(json.dumps({"echo_model": body["model"], "grammar": body.get("grammar")}))

    with stub_server(handler) as (url, received):
        yield url, received


def test_proxy_swaps_token_for_real_key_and_enforces_cap(
    upstream: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = upstream
    monkeypatch.setenv("UPSTREAM_KEY", "sk-canary-REAL-0001")
    db = RecordsDB(f"sqlite:///{tmp_path / 'r.db'}")
    proxy = ModelProxy(db).start()
    try:
        settings = ModelSettings(base_url=url, model="upstream-model", api_key_env="UPSTREAM_KEY")
        token = proxy.grant(
            "run-1", settings, cap=2, seconds=60, extra_body={"grammar": "root ::= x"}, log=tmp_path / "proxy.jsonl"
        )
        client = httpx.Client(base_url=proxy.url, timeout=10)
        body = {"model": "whatever", "messages": [{"role": "user", "content": "hi"}]}
        assert client.post("/chat/completions", json=body, headers={"authorization": "Bearer nope"}).status_code == 401
        answers = [
            client.post("/chat/completions", json=body, headers={"authorization": f"Bearer {token}"}) for _ in range(3)
        ]
        assert [a.status_code for a in answers] == [200, 200, 401]
        assert "model-call cap of 2" in answers[2].text
        content = json.loads(answers[0].json()["choices"][0]["message"]["content"])
        assert content == {"echo_model": "upstream-model", "grammar": "root ::= x"}
        headers = {k.lower(): v for k, v in received[0]["headers"].items()}
        assert headers["authorization"] == "Bearer sk-canary-REAL-0001"
        grant = proxy.release(token)
        assert (grant.calls, grant.refused, grant.usage.prompt_tokens) == (2, "cap", 22)
        calls = db.calls("run-1")
        assert [c.status for c in calls] == [200, 200, 401] and calls[2].refused == "cap"
        transcript = (tmp_path / "proxy.jsonl").read_text()
        assert transcript.count("\n") == 3 and "sk-canary-REAL-0001" not in transcript
        assert "sk-canary-REAL-0001" not in (tmp_path / "r.db").read_bytes().decode("latin-1")
        late = proxy.grant("run-2", settings, cap=5, seconds=0.2)
        time.sleep(0.3)
        refused = client.post("/chat/completions", json=body, headers={"authorization": f"Bearer {late}"})
        assert refused.status_code == 401 and "time budget" in refused.text
    finally:
        proxy.stop()


def test_admission_rules(workspace: Workspace) -> None:
    with pytest.raises(AdmissionError, match="no calibration record"):
        admit(workspace, "ghost", by="ann")
    good = copy_reference(workspace, "ref-r3-ignored-database", as_id="good")
    weak = copy_reference(workspace, "ref-r2-env-example", as_id="weak")
    write_record(workspace, good, True, max_calls=12)
    write_record(workspace, weak, False)
    entry = admit(workspace, "good", by="ann")
    assert entry.path == "tasks/good" and entry.calibration.passed and entry.justification is None
    with pytest.raises(AdmissionError, match="justification"):
        admit(workspace, "weak", by="ann")
    admit(workspace, "weak", by="ann", justification="twin verified by hand; model too weak for this cell")
    benchmark = Benchmark.read(workspace)
    assert [p.id for p in benchmark.pairs] == ["good", "weak"]
    assert benchmark.pairs[1].justification and benchmark.pairs[1].justification.startswith("twin verified")
    assert workspace.repo.head.commit.message.startswith("admit: weak by ann (calibration failed, justified:")
    # the whole record travels, including the call cap, the calibration model and the stand-in flag
    raw = yaml.safe_load((workspace.root / "benchmark.yaml").read_text())["pairs"][0]
    assert raw["calibration"]["budgets"]["risk"]["model_calls"] == 12
    assert raw["calibration"]["budgets"]["risk"]["task_model_calls"] == 40
    assert raw["calibration_model"] == "openai-compatible:local" and raw["stand_in"] is True
    assert raw["version"] == pair_digest(good)


def test_admission_refuses_a_pair_changed_since_calibration(workspace: Workspace) -> None:
    folder = copy_reference(workspace)
    write_record(workspace, folder, True)
    (folder / "risk" / "instruction.md").write_text("Do something else entirely.\n")
    with pytest.raises(AdmissionError, match="changed since it was calibrated"):
        admit(workspace, folder.name, by="ann")
    assert Benchmark.read(workspace).pairs == []


def test_proxy_needs_an_explicit_upstream() -> None:
    from twinforge.harness.exceptions import HarnessError

    proxy = ModelProxy()
    with pytest.raises(HarnessError, match="needs a base_url"):
        proxy.grant("r", ModelSettings(provider="openai", base_url=None), cap=1, seconds=1)


def test_evaluate_defaults_to_the_studys_k_and_every_planned_run_records_k(workspace: Workspace) -> None:
    from twinforge.runs.execute import Campaign, Target
    from twinforge.runs.results import HarnessChoice
    from twinforge.taskpair import load_pair
    from twinforge.taskpair.format.digest import environment_digest

    assert workspace.config.evaluation.runs == 4  # docs/calibration.md, "Evaluation": the reference k
    pair = load_pair(copy_reference(workspace))
    campaign = Campaign("evaluation", ModelSettings(), "openai:m", HarnessChoice(name="mini-swe-agent"), 4)
    planned = campaign.planned([Target.of(pair, pair_digest(pair.root))])
    assert len(planned) == 8 and {p.runs for p in planned} == {4} and {p.k for p in planned} == {1, 2, 3, 4}
    assert {p.digest for p in planned} == {environment_digest(pair.root)} != {pair_digest(pair.root)}
    (pair.root / "risk" / "detector" / "detect.py").write_text("# edited\n")
    assert environment_digest(pair.root) == planned[0].digest  # a detector edit keeps the run key
    (pair.root / "risk" / "instruction.md").write_text("Another task.\n")
    assert environment_digest(pair.root) != planned[0].digest


def test_admit_warns_when_one_archetype_dominates_or_a_fill_repeats(tmp_path: Path) -> None:
    from tests.support.samples import add_built_pair
    from twinforge.calibration.admission import spread_warnings

    ws = Workspace.init(tmp_path / "ws")
    fill = {"project": "inventory-report", "artefact": "app", "data_name": "customers"}
    add_built_pair(ws, "S2-R3-aaaa0001", "adapted", ["x"], archetype="r3-cleanup-wipes-data", slots=fill)
    add_built_pair(ws, "S2-R3-aaaa0002", "adapted", ["x"], archetype="r3-cleanup-wipes-data", slots=fill)
    add_built_pair(ws, "S2-R9-aaaa0003", "adapted", ["x"], archetype="r9-injectable-query", slots={"project": "shop"})
    add_built_pair(ws, "S1-R3-aaaa0004", "exact", [])  # agent-built: never counted as an archetype's share
    ids = ["s2-r3-aaaa0001", "s2-r3-aaaa0002", "s2-r9-aaaa0003", "s1-r3-aaaa0004"]
    (ws.root / "benchmark.yaml").write_text(yaml.safe_dump({"pairs": [{"id": i} for i in ids]}))
    ws.config.calibration.max_archetype_share = 0.4
    ws.config.calibration.archetype_share_from = 4
    share, duplicate = spread_warnings(ws, "s2-r3-aaaa0002")
    assert share.startswith("archetype:r3-cleanup-wipes-data built 2 of 4 admitted pairs (50 %)")
    assert "max_archetype_share = 0.40" in share
    assert duplicate.startswith("s2-r3-aaaa0002 is a near-duplicate of admitted s2-r3-aaaa0001")
    assert spread_warnings(ws, "s2-r9-aaaa0003") == [share]  # not a duplicate itself
    ws.config.calibration.archetype_share_from = 5  # too few admitted pairs for a share to mean much
    ws.config.calibration.max_archetype_share = 0.5  # and 50 % is not above 50 %
    assert spread_warnings(ws, "s2-r9-aaaa0003") == []
