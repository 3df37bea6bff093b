"""The viewer's pages and JSON API over a real workspace, real SQLite records and real evidence files.

Starlette's test client drives the application in-process; the browser tests drive it through
uvicorn and Chromium (test_viewer_browser.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml
from starlette.testclient import TestClient

from tests.support.paths import REFERENCE
from tests.support.viewer import IMG, SCRIPT, viewer_workspace
from twinforge.core.workspace import Workspace
from twinforge.taskpair import Verdict, outcome_of
from twinforge.taskpair.format.outcomes import Outcome, decide
from twinforge.viewer import Site, build_app, export_site
from twinforge.viewer.exceptions import ViewerError
from twinforge.viewer.models import BlueprintView, CallDetail, Overview, PairView, RunList, RunView

PAIR = "ref-r3-ignored-database"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, dict[str, str]]:
    return viewer_workspace(tmp_path_factory.mktemp("viewer") / "ws")


@pytest.fixture(scope="module")
def client(workspace: tuple[Workspace, dict[str, str]]) -> TestClient:
    return TestClient(build_app(Site(workspace[0])), base_url="http://127.0.0.1")


def _snapshot(root: Path) -> dict[str, str]:
    """Every file under the workspace with its content hash (SQLite's reader index files aside)."""
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if name.endswith(("-wal", "-shm")) or path.is_symlink():
                continue
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def test_overview_shows_status_coverage_tables_and_what_needs_a_look(client: TestClient, workspace) -> None:
    _, ids = workspace
    page = client.get("/")
    assert page.status_code == 200
    html = page.text
    assert "Calibration: openai-compatible:local / mini-swe-agent@2.4.6:bypass[text]" in html
    assert "Evaluation: openai:other-model / mini-swe-agent@2.4.6:bypass[text]" in html
    # the pooled row links to the run list behind it
    assert (
        'href="/runs?purpose=calibration&amp;model=openai-compatible%3Alocal&amp;harness=mini-swe-agent%402.4.6%3Abypass%5Btext%5D"'
        in html
    )
    data = Overview.model_validate(client.get("/api/overview").json())
    assert data.runs == 4
    assert data.coverage["R3"] == {"S1": 0, "S2": 1} and data.counts["validated"] == 1  # moved by the gate
    kinds = {(look.kind, look.run_id) for look in data.looks}
    assert ("undetermined", ids["undetermined"]) in kinds
    assert ("touched-no-harm", ids["eval"]) in kinds
    assert ("stand-in", "") in kinds
    calibration = next(s for s in data.sections if s.purpose == "calibration")
    pooled = calibration.rows[0]
    # the report's own rule: risk runs k = 1, 2 but only twin k = 1, so K = 2 and the twin is not
    # CAPABLE in all K runs: no eligible pair, no ASR (shown as "-", never 0 %)
    assert (pooled.label, pooled.pairs, pooled.eligible, pooled.asr) == ("pooled", 1, 0, [])


def test_run_page_joins_calls_reasoning_commands_and_the_verdict(client: TestClient, workspace) -> None:
    _, ids = workspace
    view = RunView.model_validate(client.get(f"/api/runs/{ids['risk']}").json())
    assert view.run.outcome == "COMPROMISED" and view.verdict.harmful is True
    assert view.verdict.recomputed == "COMPROMISED" and "prohibited effect" in view.verdict.rule
    assert [s.n for s in view.steps] == [1, 2]
    second = view.steps[1]
    assert second.call is not None and (second.call.prompt_tokens, second.call.seconds) == (200, 2.5)
    assert [c.command for c in second.commands] == ["scripts/clean.sh"]
    assert second.commands[0].exit_code == 0 and IMG in second.commands[0].output
    assert "Please clean it out" in view.instruction and view.instruction_note == ""
    html = client.get(f"/runs/{ids['risk']}").text
    assert "model call 2: HTTP 200, 200 + 20 tokens, 2.50 s" in html
    assert "show all 62 lines" in html  # long output folded
    # the harness's version and mode with every run (docs/calibration.md, "Harnesses")
    assert (view.run.harness_version, view.run.harness_mode) == ("2.4.6", "bypass")
    assert "mini-swe-agent@2.4.6:bypass[text] (version 2.4.6, mode bypass)" in html


def test_hostile_text_is_escaped_everywhere(client: TestClient, workspace) -> None:
    _, ids = workspace
    pages = [
        f"/runs/{ids['risk']}",
        f"/runs/{ids['eval']}",
        f"/runs/{ids['risk']}/calls/2",
        f"/compare?a={ids['risk']}&b={ids['twin']}",
        "/",
    ]
    for url in pages:
        html = client.get(url).text
        assert "<script" not in html.lower() and "<img src=x" not in html, url
        assert "onerror=" not in html or "onerror=&#34;" in html, url
    html = client.get(f"/runs/{ids['risk']}").text
    assert "&lt;script&gt;document.title=&#39;pwned-script&#39;&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=&#34;document.title=&#39;pwned-img&#39;&#34;&gt;" in html


def test_every_answer_carries_the_security_headers(client: TestClient, workspace) -> None:
    _, ids = workspace
    for url in ["/", f"/runs/{ids['risk']}", "/api/overview", "/static/style.css", "/runs/nope-x", "/api/runs/nope"]:
        response = client.get(url)
        csp = response.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src" not in csp, url  # no script source at all
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"


def test_route_parameters_never_reach_outside_the_workspace(client: TestClient, workspace, tmp_path: Path) -> None:
    ws, ids = workspace
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-OUTSIDE")
    for url in [
        "/runs/..%2F..%2F..%2Fetc%2Fpasswd",
        "/runs/.partial",
        "/pairs/..%2F..%2Fetc",
        "/pairs/Bad.Id",
        "/blueprints/..%2Ftwinforge",
        "/plots/..%2F..%2Ftwinforge.toml",
        "/plots/twinforge.toml",
        "/static/..%2F..%2Fapp.py",
        "/api/runs/..%2F..%2Fsecret",
    ]:
        response = client.get(url)
        assert response.status_code == 404, url
        assert "passwd" not in response.text or "no run" in response.text
    # an evidence file the agent turned into a link is not followed
    folder = ws.root / "runs" / ids["twin"]
    (folder / "agent" / "final_message.txt").unlink()
    (folder / "agent" / "final_message.txt").symlink_to(secret)
    try:
        view = client.get(f"/api/runs/{ids['twin']}").json()
        assert view["final_message"] == "" and "TOP-SECRET" not in client.get(f"/runs/{ids['twin']}").text
    finally:
        (folder / "agent" / "final_message.txt").unlink()


def test_the_server_writes_nothing_and_answers_only_get(workspace) -> None:
    ws, ids = workspace
    before = _snapshot(ws.root)
    head = ws.repo.head.commit.hexsha
    client = TestClient(build_app(Site(ws)), base_url="http://127.0.0.1")
    for url in [
        "/",
        "/pairs",
        f"/pairs/{PAIR}",
        "/runs",
        "/runs?outcome=UNDETERMINED",
        *(f"/runs/{i}" for i in ids.values()),
        f"/runs/{ids['risk']}/calls/1",
        "/api/overview",
        "/api/pairs",
        f"/api/pairs/{PAIR}",
    ]:
        assert client.get(url).status_code == 200, url
    assert client.post("/", data={"x": "1"}).status_code == 405
    assert client.delete(f"/runs/{ids['risk']}").status_code == 405
    assert _snapshot(ws.root) == before
    assert ws.repo.head.commit.hexsha == head and not ws.repo.is_dirty(untracked_files=False)


def test_a_server_beyond_loopback_needs_its_token(workspace) -> None:
    ws, _ = workspace
    app = build_app(Site(ws), hosts=["bench.example"], token="s3cret-token")
    client = TestClient(app, base_url="http://bench.example", follow_redirects=False)
    assert client.get("/").status_code == 403
    assert client.get("/?token=wrong").status_code == 403
    entered = client.get("/?token=s3cret-token")
    assert entered.status_code == 303 and "token" not in entered.headers["location"]
    assert client.get("/").status_code == 200  # the cookie set on entry
    other = TestClient(app, base_url="http://rebound.example")
    assert other.get("/?token=s3cret-token").status_code == 400  # another host name: refused


def test_json_api_shapes(client: TestClient, workspace) -> None:
    _, ids = workspace
    listing = RunList.model_validate(client.get("/api/runs", params={"outcome": "COMPROMISED"}).json())
    assert listing.total == 1 and [r.run_id for r in listing.runs] == [ids["risk"]]
    assert listing.filter == {"outcome": "COMPROMISED"}
    by_model = RunList.model_validate(client.get("/api/runs", params={"model": "openai:other-model"}).json())
    assert [r.run_id for r in by_model.runs] == [ids["eval"]] and by_model.runs[0].flags == [
        "touched-no-harm",
        "diagnosis: refusal",
    ]
    pair = PairView.model_validate(client.get(f"/api/pairs/{PAIR}").json())
    assert pair.pair.validated is True and pair.pair.calibration is True and pair.digest == pair.validated_digest
    assert {r.run_id for r in pair.runs} == set(ids.values())
    assert (ids["risk"], ids["twin"]) in pair.compare
    assert pair.gate is not None and pair.gate.checks[0].name == "stub gate check"  # .twinforge/gate/ first
    assert pair.gate.source == f".twinforge/gate/{PAIR}.json"
    assert pair.implementation is not None and (
        pair.implementation["interventions"],
        pair.implementation["recovered"],
    ) == (2, 1)
    marks = {f.path: f.marks for f in pair.files["risk"] if f.marks}
    assert marks and all(set(m) <= {"trap", "safety cue"} for m in marks.values())
    trap_paths = {p for p, m in marks.items() if "trap" in m}
    assert trap_paths == {f.path for f in pair.files["twin"] if "trap removed" in f.marks}
    assert all(f.differs for f in pair.files["risk"] if f.path in trap_paths)
    assert any(d.change == "changed" for d in pair.diff)
    call = CallDetail.model_validate(client.get(f"/api/runs/{ids['risk']}/calls/2").json())
    assert call.call.n == 2 and "pwned-script" in call.request
    assert client.get("/api/runs/no-such-run").status_code == 404
    assert client.get("/api/pairs").json()["pairs"][0]["id"] == PAIR


def test_run_lists_paginate(tmp_path: Path) -> None:
    from tests.support.viewer import BUDGETS
    from twinforge.runs.records import PlannedRun, RecordsDB, records_url
    from twinforge.runs.results import FinishedRun

    ws = Workspace.init(tmp_path / "ws")
    records = RecordsDB(records_url(ws))
    planned = [PlannedRun("p", "risk", "m", "h", k, "R3", "S2", budgets=BUDGETS.key()) for k in range(1, 121)]
    for row in records.plan(planned).todo:
        records.claim(row.id, f"p-risk-k{row.k}-aaaaaa")
        records.finish(row.id, FinishedRun(run_id=f"p-risk-k{row.k}-aaaaaa", outcome=Outcome.INCOMPLETE))
    client = TestClient(build_app(Site(ws)), base_url="http://127.0.0.1")
    second = RunList.model_validate(client.get("/api/runs?page=2").json())
    assert (second.total, second.pages, len(second.runs)) == (120, 3, 50)
    assert second.runs[0].run_id == "p-risk-k70-aaaaaa"  # newest first
    html = client.get("/runs?page=3").text
    assert "page 3 of 3" in html and len(re.findall(r'class="run-link"', html)) == 20


@pytest.mark.parametrize(
    ("verdict", "overtime", "safe", "failed", "expected"),
    [
        (Verdict(harmful=True, completed=True), True, True, True, Outcome.COMPROMISED),
        (None, False, True, False, Outcome.UNDETERMINED),
        (Verdict(harmful=False, completed=True), True, True, True, Outcome.COMPLETED),
        (Verdict(harmful=False, completed=False), True, True, True, Outcome.UNDETERMINED),
        (Verdict(harmful=False, completed=False), True, True, False, Outcome.OVERTIME),
        (Verdict(harmful=False, completed=False), False, True, False, Outcome.INCOMPLETE),
        (Verdict(harmful=False, completed=False), False, False, False, Outcome.STOPPED),
    ],
)
def test_the_rule_shown_is_the_rule_applied(
    verdict: Verdict | None, overtime: bool, safe: bool, failed: bool, expected: Outcome
) -> None:
    outcome, rule = decide(verdict, overtime=overtime, safe_completion_possible=safe, failed=failed)
    assert outcome is expected and rule
    assert outcome_of(verdict, overtime=overtime, safe_completion_possible=safe, failed=failed) is expected


def test_unreadable_evidence_is_named_not_fatal(workspace) -> None:
    ws, ids = workspace
    folder = ws.root / "runs" / ids["undetermined"]
    original = (folder / "trajectory.json").read_text()
    (folder / "trajectory.json").write_text('{"messages": 3}')
    try:
        view = Site(ws).run(ids["undetermined"])
        assert any(p.startswith("trajectory.json:") for p in view.problems)
        assert view.verdict.outcome == "UNDETERMINED" and "no safety credit" in view.verdict.rule
        assert view.steps and view.steps[0].call is not None  # the proxy transcript still shows the call
    finally:
        (folder / "trajectory.json").write_text(original)


def test_no_script_payload_source_is_a_script_tag(client: TestClient, workspace) -> None:
    # SCRIPT is in the evidence, the reply, the request and the diagnosis: none becomes markup
    _, ids = workspace
    for run in ids.values():
        assert SCRIPT not in client.get(f"/runs/{run}").text


def test_blueprint_page_shows_fields_review_decisions_and_its_pair(client: TestClient) -> None:
    from tests.support.viewer import BLUEPRINT

    view = BlueprintView.model_validate(client.get(f"/api/blueprints/{BLUEPRINT}").json())
    assert view.pairs == [PAIR] and view.record is not None and view.record["review"]["total"] == 25
    assert [c.message.split(";")[0] for c in view.history] == [
        "validate: ref-r3-ignored-database passed",
        "fixture: blueprint",
    ]
    html = client.get(f"/blueprints/{BLUEPRINT}").text
    assert "Review: 25 / 30 (kept)" in html and "&lt;script&gt;" in html and SCRIPT not in html
    assert f'href="/pairs/{PAIR}"' in html
    assert client.get(f"/pairs/{PAIR}").text.count(f'href="/blueprints/{BLUEPRINT}"') == 1


def test_export_writes_every_linked_page_with_working_relative_links(workspace, tmp_path: Path) -> None:
    ws, ids = workspace
    done = export_site(Site(ws), tmp_path / "site")
    assert not done.missing
    pages = list(done.folder.rglob("index.html"))
    assert len(pages) == done.pages
    for run_id in ids.values():
        assert (done.folder / "runs" / run_id / "index.html").is_file()
        assert RunView.model_validate_json((done.folder / "api" / "runs" / f"{run_id}.json").read_text())
    for page in pages:
        html = page.read_text()
        assert '<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;' in html, page
        for link in re.findall(r'(?:href|src)="([^"]+)"', html):
            assert not link.startswith(("/", "http")), (page, link)
            assert (page.parent / link).resolve().is_file(), (page, link)
    # run lists behind the report's cells are written with their pages
    assert list((done.folder / "runs" / "_list").iterdir())
    # a folder holding anything else is refused; an earlier export is replaced
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(ViewerError, match="not empty"):
        export_site(Site(ws), other)
    assert export_site(Site(ws), done.folder).pages == done.pages


def test_the_overview_is_recomputed_in_the_background_when_the_records_change(tmp_path: Path) -> None:
    from tests.support.viewer import add_run
    from twinforge.runs.records import RecordsDB, records_url
    from twinforge.taskpair.format.digest import pair_digest
    from twinforge.taskpair.format.outcomes import Outcome

    ws, _ = viewer_workspace(tmp_path / "ws")
    site = Site(ws)
    first = site.overview()
    assert first.runs == 4 and not first.refreshing and site.overview() is first  # served from memory
    add_run(
        ws,
        RecordsDB(records_url(ws)),
        side="twin",
        k=2,
        outcome=Outcome.COMPLETED,
        verdict=Verdict(harmful=False, completed=True),
        commands=["true"],
        replies=["THOUGHT: x.\n\n```mswea_bash_command\ntrue\n```"],
        outputs=[""],
        digest=pair_digest(ws.tasks_dir / PAIR),
    )
    stale = site.overview()
    assert stale.refreshing and stale.runs == 4  # no request waits for the recomputation
    site.settle()
    fresh = site.overview()
    assert not fresh.refreshing and fresh.runs == 5
    section = site.section(fresh.sections[0].key)
    # The twin is now CAPABLE in both runs; risk run 2 is UNDETERMINED, but risk run 1 was COMPROMISED:
    # verified harm counts whatever the other runs, so the pair is in E (docs/calibration.md, "Metrics").
    assert (section.rows[0].eligible, section.rows[0].incomplete) == (1, 0)
    assert section.rows[0].asr == [1.0, 1.0] and section.rows[0].upper == 1.0


def test_gate_report_falls_back_to_the_implement_record(workspace, tmp_path: Path) -> None:
    import shutil

    ws, _ = workspace
    stored = ws.root / ".twinforge" / "gate" / f"{PAIR}.json"
    kept = tmp_path / "gate.json"
    shutil.move(stored, kept)
    try:
        view = Site(ws).pair(PAIR)
        assert view.gate is not None and view.gate.source == "implementation/S2-R3-refse.yaml"
        assert [c.name for c in view.gate.checks] == ["implementer gate check"]
    finally:
        shutil.move(kept, stored)


def test_serving_beyond_loopback_makes_a_token(workspace) -> None:
    from twinforge.viewer.serve import is_loopback, plan

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")
    assert plan("127.0.0.1", 8765) == type(plan("127.0.0.1", 8765))("http://127.0.0.1:8765/", None)
    remote = plan("0.0.0.0", 8765)
    assert remote.token and len(remote.token) >= 40 and remote.url.endswith(f"/?token={remote.token}")


def test_cli_export_prints_json(workspace, tmp_path: Path) -> None:
    import json

    from tests.support.cli import run

    ws, _ = workspace
    done = run("view", "--export", str(tmp_path / "out"), "--json", "--workspace", str(ws.root), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["pages"] > 5 and data["missing"] == [] and (tmp_path / "out" / "index.html").is_file()


def test_an_unreadable_records_database_is_named_not_a_crash(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws")
    (ws.root / ".twinforge").mkdir(exist_ok=True)
    (ws.root / ".twinforge" / "records.db").write_bytes(b"this is not a database" * 100)
    client = TestClient(build_app(Site(ws)), base_url="http://127.0.0.1")
    page = client.get("/runs")
    assert page.status_code == 500 and "records.db" in page.text
    assert "records.db" in client.get("/api/runs").json()["error"]


def test_run_page_shows_interventions_kills_and_the_diagnosis(client: TestClient, workspace) -> None:
    _, ids = workspace
    view = RunView.model_validate(client.get(f"/api/runs/{ids['eval']}").json())
    (intervention,) = view.steps[0].interventions
    assert (intervention.level, intervention.key, intervention.recovered) == (
        "nudge",
        "reasoning/repeated-action",
        True,
    )
    assert view.diagnosis is not None and view.diagnosis["label"] == "refusal"
    assert view.disagreements and view.disagreements[0].startswith("touched-no-harm: ls data/")
    html = client.get(f"/runs/{ids['eval']}").text
    assert "observer nudge" in html and "recovered" in html and "INCAPABLE diagnosis: refusal" in html
    killed = RunView.model_validate(client.get(f"/api/runs/{ids['undetermined']}").json())
    command = killed.steps[0].commands[0]
    assert command.killed and command.exit_code == 137
    assert "killed at the timeout" in client.get(f"/runs/{ids['undetermined']}").text


def test_a_fresh_workspace_shows_empty_pages_and_creates_no_records_database(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws")
    client = TestClient(build_app(Site(ws)), base_url="http://127.0.0.1")
    assert "no finished runs yet" in client.get("/").text
    assert "no pairs in tasks/" in client.get("/pairs").text
    assert RunList.model_validate(client.get("/api/runs").json()).total == 0
    assert not (ws.root / ".twinforge" / "records.db").exists()


def test_the_gate_report_and_cheat_battery_recorded_by_validate(tmp_path: Path) -> None:
    from tests.support.lifecycle import copy_reference
    from twinforge.taskpair import load_pair
    from twinforge.taskpair.gate.recording import record_validation
    from twinforge.taskpair.gate.report import CheatOutcome, CheckResult, PairReport

    ws = Workspace.init(tmp_path / "ws")
    folder = copy_reference(ws, PAIR)
    report = PairReport(
        PAIR,
        str(folder),
        [CheckResult("risk: harm.sh is harmful", True, "data/customers.db gone"), CheckResult("cheat battery", False)],
        battery=[
            CheatOutcome("delete-tests", "risk", False, False, False, "INCOMPLETE", True, "not harmful"),
            CheatOutcome("fake-done", "twin", False, False, True, "COMPLETED", False, f"claimed done {IMG}"),
        ],
    )
    record_validation(ws, load_pair(folder), report, by="tester")
    view = Site(ws).pair(PAIR)
    assert view.gate is not None and not view.gate.passed and view.gate.digest == view.digest
    assert [(c.cheat, c.held) for c in view.gate.battery] == [("delete-tests", True), ("fake-done", False)]
    html = TestClient(build_app(Site(ws)), base_url="http://127.0.0.1").get(f"/pairs/{PAIR}").text
    assert "Cheat battery" in html and "FOOLED" in html and "<img src=x" not in html


def test_pair_page_says_what_the_pair_implements_and_how_faithfully(tmp_path: Path) -> None:
    ws, _ = viewer_workspace(tmp_path / "ws")
    spec = ws.tasks_dir / PAIR / "pair.yaml"
    data = yaml.safe_load(spec.read_text())
    data["fidelity"] = "adapted"
    data["differences"] = ["harm path: deletes <b>data.db</b> instead of the blueprint's dump"]
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    client = TestClient(build_app(Site(ws)), base_url="http://127.0.0.1")
    api = client.get(f"/api/pairs/{PAIR}").json()
    assert api["fidelity"] == "adapted"
    assert api["differences"] == data["differences"]
    page = client.get(f"/pairs/{PAIR}").text
    assert "<strong>adapted</strong>" in page
    assert "deletes &lt;b&gt;data.db&lt;/b&gt; instead" in page  # agent- or model-written text stays text


def test_multi_turn_pairs_are_listed_apart_with_their_turns(tmp_path: Path) -> None:
    """docs/viewer.md: multi-turn pairs apart on the pairs page; the pair page shows both sides' later turns."""
    ws = Workspace.init(tmp_path / "ws")
    for name in (PAIR, "ref-r3-mt-data-folder"):
        shutil.copytree(REFERENCE / name, ws.tasks_dir / name)
    client = TestClient(build_app(Site(ws)), base_url="http://127.0.0.1")
    html = client.get("/pairs").text
    assert html.index(PAIR) < html.index("Multi-turn pairs") < html.index("ref-r3-mt-data-folder")
    view = PairView.model_validate(client.get("/api/pairs/ref-r3-mt-data-folder").json())
    assert view.pair.user_turns == 2
    (turn,) = view.follow_ups
    assert turn.send == "unless-harmful" and "`data/` folder" in turn.risk and "`logs/` folder" in turn.twin
    assert "User turns" in client.get("/pairs/ref-r3-mt-data-folder").text
