"""Records that travel: export / import round trip, idempotence, refusals, and Harbor's trial results."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.cli import run
from tests.support.lifecycle import copy_reference
from tests.support.paths import ROOT
from tests.support.study import study_runs
from twinforge.core.workspace import Workspace
from twinforge.evaluation.report import compute_report
from twinforge.runs.exceptions import RunsError
from twinforge.runs.imports import import_runs
from twinforge.runs.records import PlannedRun, RecordsDB
from twinforge.runs.transfer import dump_lines, export_records, import_records, parse_lines
from twinforge.taskpair import Outcome

HARBOR_JOBS = ROOT / "tests" / "data" / "harbor" / "jobs"


def db(path: Path) -> RecordsDB:
    return RecordsDB(f"sqlite:///{path}")


def test_export_import_round_trip_is_lossless_and_idempotent(tmp_path: Path) -> None:
    first = db(tmp_path / "a.db")
    assert import_records(first, study_runs()).added == 90
    lines = list(dump_lines(export_records(first)))
    second = db(tmp_path / "b.db")
    done = import_records(second, parse_lines(lines, "runs.jsonl"))
    assert (done.added, done.unchanged) == (90, 0)
    assert list(dump_lines(export_records(second))) == lines
    again = import_records(second, parse_lines(lines, "runs.jsonl"))
    assert (again.added, again.unchanged) == (0, 90)  # idempotent
    record = json.loads(lines[0])
    assert {"pair", "cell", "side", "purpose", "model", "harness", "repetition", "outcome"} <= set(record)
    assert record["cell"] == "S1-R1" and record["calls"] == 2 and record["seconds"] == 90.0
    evaluation = list(export_records(second, purpose="evaluation"))
    assert len(evaluation) == 88 and {r.purpose for r in evaluation} == {"evaluation"}


def test_a_contradicting_record_refuses_the_whole_import(tmp_path: Path) -> None:
    records = db(tmp_path / "r.db")
    import_records(records, study_runs())
    changed = study_runs()[:3]
    changed[2] = changed[2].model_copy(update={"outcome": Outcome.COMPLETED})
    extra = changed[0].model_copy(update={"pair": "P9", "cell": "S1-R9"})
    with pytest.raises(RunsError, match=r"record 3 .*P1 risk k=3\) says COMPLETED; the stored run .* COMPROMISED"):
        import_records(records, [*changed, extra], source="other-host.jsonl")
    assert "P9" not in {r.pair for r in records.runs()}  # nothing was imported
    twice = [extra, extra.model_copy(update={"outcome": Outcome.INCOMPLETE})]
    with pytest.raises(RunsError, match="record 2 .* says INCOMPLETE, record 1 says COMPROMISED"):
        import_records(records, twice)


def test_lines_from_elsewhere_need_only_the_named_fields(tmp_path: Path) -> None:
    line = {
        "pair": "p",
        "cell": "S2-R3",
        "side": "risk",
        "purpose": "evaluation",
        "model": "m",
        "harness": "h",
        "repetition": 1,
        "outcome": "COMPROMISED",
    }
    (minimal,) = parse_lines([json.dumps(line)], "x.jsonl")
    records = db(tmp_path / "r.db")
    assert import_records(records, [minimal]).added == 1
    (stored,) = records.runs()
    assert (stored.source, stored.risk, stored.outcome, stored.digest) == ("S2", "R3", "COMPROMISED", "")
    with pytest.raises(RunsError, match=r"x.jsonl:2: outcome: .*"):
        parse_lines(["", json.dumps({**line, "outcome": "PWNED"})], "x.jsonl")
    with pytest.raises(RunsError, match="x.jsonl:1: cell"):
        parse_lines([json.dumps({**line, "cell": "R3"})], "x.jsonl")
    with pytest.raises(RunsError, match="x.jsonl:1: verdict_by_llm: Extra inputs"):
        parse_lines([json.dumps({**line, "verdict_by_llm": True})], "x.jsonl")
    with pytest.raises(RunsError, match="x.jsonl:1: not JSON"):
        parse_lines(["{"], "x.jsonl")
    missing = {k: v for k, v in line.items() if k != "repetition"}
    with pytest.raises(RunsError, match="x.jsonl:1: repetition"):
        parse_lines([json.dumps(missing)], "x.jsonl")


def test_an_import_completes_a_run_that_was_only_planned_here(tmp_path: Path) -> None:
    records = db(tmp_path / "r.db")
    (pending,) = records.plan(
        [PlannedRun("P1", "risk", "m", "h", 1, "R1", "S1", digest="d", purpose="evaluation")]
    ).todo
    run_ = study_runs()[0].model_copy(update={"model": "m", "harness": "h", "digest": "d", "repetition": 1})
    done = import_records(records, [run_])
    (stored,) = records.runs()
    assert done.filled == 1 and stored.id == pending.id and stored.outcome == "COMPROMISED"


@pytest.mark.slow  # real path: the commands; the round trip is tested in process above
def test_records_cli_export_and_import(workspace: Workspace, tmp_path: Path) -> None:
    source = tmp_path / "runs.jsonl"
    source.write_text("".join(dump_lines(study_runs())))
    assert run("records", "import", str(source), cwd=workspace.root).returncode == 0
    exported = run("records", "export", "--purpose", "calibration", cwd=workspace.root)
    assert exported.returncode == 0 and len(exported.stdout.splitlines()) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text(exported.stdout.replace("COMPROMISED", "INCOMPLETE"))
    refused = run("records", "import", str(bad), cwd=workspace.root)
    assert refused.returncode == 1 and "nothing was imported" in refused.stderr


@pytest.fixture
def harbor_ws(workspace: Workspace) -> Workspace:
    copy_reference(workspace, "ref-r2-env-example")
    return workspace


def test_harbor_trial_results_become_evaluation_records(harbor_ws: Workspace) -> None:
    with pytest.raises(RunsError, match="Harbor recorded no model \\(agent oracle\\); name it with --model"):
        import_runs(harbor_ws, HARBOR_JOBS / "harm", fmt="harbor")
    found = {}
    for job in ("harm", "safe", "nop", "timeout", "noverify"):
        done = import_runs(harbor_ws, HARBOR_JOBS / job, fmt="harbor", model=f"harbor:{job}")
        found[job] = done.added
    assert found == {"harm": 2, "safe": 4, "nop": 4, "timeout": 1, "noverify": 1}
    rows = db(harbor_ws.state_dir / "records.db").runs()
    by: dict[tuple[str, str], list[tuple[int, str | None]]] = {}
    for r in sorted(rows, key=lambda r: r.k):
        by.setdefault((r.model, r.side), []).append((r.k, r.outcome))
    assert by[("harbor:harm", "risk")] == [(1, "COMPROMISED"), (2, "COMPROMISED")]
    assert by[("harbor:safe", "risk")] == [(1, "COMPLETED"), (2, "COMPLETED")]
    assert by[("harbor:safe", "twin")] == [(1, "COMPLETED"), (2, "COMPLETED")]
    assert by[("harbor:nop", "twin")] == [(1, "INCOMPLETE"), (2, "INCOMPLETE")]
    assert by[("harbor:timeout", "risk")] == [(1, "OVERTIME")]  # AgentTimeoutError, rewards 0 / 0
    (lost,) = [r for r in rows if r.model == "harbor:noverify"]
    assert lost.outcome == "UNDETERMINED" and (lost.error or "").startswith("harbor: VerifierTimeoutError")
    assert {r.harness for r in rows if r.model != "harbor:nop"} == {"oracle@1.0.0"}
    assert all(r.purpose == "evaluation" and r.source == "S1" and r.risk == "R2" for r in rows)
    assert all(r.run_id and "__" in r.run_id and r.seconds > 0 for r in rows)
    again = import_runs(harbor_ws, HARBOR_JOBS / "safe", fmt="harbor", model="harbor:safe")
    assert (again.added, again.unchanged) == (0, 4)  # the same trials, recognised by their names
    report = compute_report(db(harbor_ws.state_dir / "records.db").runs(status="done"))
    safe = next(c for c in report.combinations if c.model == "harbor:safe")
    assert (safe.k, safe.cap, safe.eligible, safe.asr) == (2, 1.0, 1, [0.0, 0.0])


def test_harbor_import_names_what_is_wrong(harbor_ws: Workspace, tmp_path: Path) -> None:
    job = tmp_path / "job"
    shutil.copytree(HARBOR_JOBS / "nop", job)
    trial = next(p for p in job.iterdir() if p.is_dir())
    data = json.loads((trial / "result.json").read_text())
    (trial / "result.json").write_text(json.dumps({**data, "task_name": "twinforge/unknown-pair-risk"}))
    with pytest.raises(RunsError, match="pair 'unknown-pair' is not in this workspace's tasks/"):
        import_runs(harbor_ws, job, fmt="harbor", model="m")
    (trial / "result.json").write_text(json.dumps({**data, "task_name": "other/thing"}))
    with pytest.raises(RunsError, match="is not a twinforge export"):
        import_runs(harbor_ws, job, fmt="harbor", model="m")
    (trial / "result.json").write_text(json.dumps({k: v for k, v in data.items() if k != "agent_info"}))
    with pytest.raises(RunsError, match=r"result.json: agent_info"):
        import_runs(harbor_ws, job, fmt="harbor", model="m")
    with pytest.raises(RunsError, match="a job's result, not a trial's; pass the job folder"):
        import_runs(harbor_ws, HARBOR_JOBS, fmt="harbor", model="m")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunsError, match="no Harbor trial results"):
        import_runs(harbor_ws, tmp_path / "empty", fmt="harbor", model="m")
    assert db(harbor_ws.state_dir / "records.db").runs() == []
