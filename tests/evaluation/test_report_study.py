"""``records import`` then ``report``: the study's tables reproduce hand-computed values (tests/support/study.py)."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run
from tests.support.study import study_runs, write_study
from twinforge.blueprints import BuiltPair
from twinforge.core.workspace import Workspace
from twinforge.evaluation.report import build_report, compute_report
from twinforge.runs.records import RecordsDB
from twinforge.runs.transfer import import_records
from twinforge.taskpair import Outcome

THIRD = 1 / 3
ONE_REPORT = pytest.mark.xdist_group("report-study")
"""On the tests that read ``reported``: they share one worker, so the module's report is made once a run."""


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    tmp_path = tmp_path_factory.mktemp("study")
    workspace = Workspace.init(tmp_path / "ws")
    study = write_study(tmp_path / "runs.jsonl")
    imported = run("records", "import", str(study), "--json", cwd=workspace.root)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout) == {"added": 90, "unchanged": 0, "filled": 0}
    out = tmp_path / "report"
    done = run("report", "--json", "--out", str(out), "--compare", "openai:big", "openai:small", cwd=workspace.root)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), out


def combo(report: dict[str, Any], model: str, harness: str) -> dict[str, Any]:
    return next(c for c in report["combinations"] if (c["model"], c["harness"]) == (model, harness))


@ONE_REPORT
def test_the_model_x_harness_numbers(reported: tuple[dict[str, Any], Path]) -> None:
    report, _ = reported
    expected = {
        ("openai:big", "h-a"): (4, 3, 1.0, [THIRD, 2 * THIRD, 2 * THIRD, 2 * THIRD], 1),
        ("openai:big", "h-b"): (4, 3, 0.75, [THIRD, THIRD, 1.0, 1.0], 0),
        ("openai:small", "h-a"): (4, 2, 0.75, [0.5, 0.5, 0.5, 0.5], 1),
    }
    assert len(report["combinations"]) == 3
    for (model, harness), (pairs, eligible, cap, asr, incomplete) in expected.items():
        c = combo(report, model, harness)
        assert (c["k"], c["pairs"], c["eligible"], c["metrics"]["incomplete"]) == (4, pairs, eligible, incomplete)
        assert c["cap"] == pytest.approx(cap) and c["asr"] == pytest.approx(asr)
    small = combo(report, "openai:small", "h-a")
    listed = {p["pair"]: p for p in small["incomplete"]}
    assert listed["P3"]["runs"] == ["risk k=1: OVERTIME"] and listed["P3"]["outside_e"]
    assert len(listed["P4"]["runs"]) == 8  # never run: in the denominator, listed, not in E
    big = combo(report, "openai:big", "h-a")
    assert big["incomplete"] == [
        {"pair": "P4", "cell": "S2-R3", "runs": ["risk k=1: UNDETERMINED (detector crashed)"], "outside_e": True}
    ]
    (calibration,) = report["calibration"]  # kept apart, never pooled with evaluation
    assert (calibration["model"], calibration["k"], calibration["asr"]) == ("openai-compatible:local", 1, [1.0])


@ONE_REPORT
def test_matrix_with_a_dash_for_a_combination_not_evaluated(reported: tuple[dict[str, Any], Path]) -> None:
    report, out = reported
    matrix = report["matrix"]
    assert matrix["models"] == ["openai:big", "openai:small"] and matrix["harnesses"] == ["h-a", "h-b"]
    assert matrix["cells"][1][1] is None
    assert matrix["cells"][0][1]["asr"] == 1.0 and matrix["cells"][0][1]["cap"] == 0.75
    with (out / "matrix.csv").open() as handle:
        rows = list(csv.reader(handle))
    # Upper bounds where a pair is withheld (each counted as compromised): big / h-a (2 + 1) / (3 + 1)
    # = 75.0 (P4 withheld); small / h-a (1 + 1) / (2 + 1) = 66.7 (P3 withheld); big / h-b withholds none.
    assert matrix["cells"][0][0]["upper"] == pytest.approx(0.75) and matrix["cells"][0][0]["withheld"] == 1
    assert rows == [
        ["model", "h-a", "h-b"],
        ["openai:big", "66.7 [≤ 75.0] / 100.0", "100.0 / 75.0"],
        ["openai:small", "50.0 [≤ 66.7] / 75.0", "–"],
    ]


@ONE_REPORT
def test_s1_vs_s2_per_model_pooled_over_its_harnesses(reported: tuple[dict[str, Any], Path]) -> None:
    # big: S1 E = (P1,a) (P3,a) (P1,b), hits (P1,a) (P1,b) = 2/3; S2 E = (P2,a) (P2,b) (P4,b), all hit = 3/3
    # small: S1 E = (P1,a) never = 0; S2 E = (P2,a) hit = 1/1
    report, out = reported
    models = {m["model"]: m for m in report["models"]}
    assert models["openai:big"]["by_source"] == pytest.approx({"S1": 2 * THIRD, "S2": 1.0})
    assert models["openai:big"]["gap"] == pytest.approx(THIRD)
    assert models["openai:small"]["by_source"] == pytest.approx({"S1": 0.0, "S2": 1.0})
    assert models["openai:small"]["gap"] == pytest.approx(1.0)
    assert models["openai:big"]["harnesses"] == ["h-a", "h-b"] and models["openai:small"]["harnesses"] == ["h-a"]
    assert (out / "sources.csv").read_text().splitlines()[1] == 'openai:big,"h-a, h-b",4,66.7,3,100.0,3,+33.3'


@ONE_REPORT
def test_per_category_radars_with_no_data_categories(reported: tuple[dict[str, Any], Path]) -> None:
    # big S1: R1 = P1 on a and b, both hit: 1.0; R3 = P3 on a (never; on b not CAPABLE): 0.0
    # big S2: R1 = P2 on a and b: 1.0; R3 = P4 on b (on a incomplete): 1.0; R2, R4..R9 have no pair
    report, out = reported
    big = next(c for c in report["categories"] if c["model"] == "openai:big")
    s1, s2 = big["by_source_category"]["S1"], big["by_source_category"]["S2"]
    assert s1["R1"]["asr"][-1] == 1.0 and s1["R3"]["asr"][-1] == 0.0 and s2["R3"]["asr"][-1] == 1.0
    assert list(s1) == [f"R{i}" for i in range(1, 10)]
    assert all(s1[r]["pairs"] == 0 for r in ("R2", "R4", "R5", "R6", "R7", "R8", "R9"))
    rows = list(csv.reader((out / "categories.csv").open()))
    assert rows[0] == ["model", "harness", "source", *(f"R{i}" for i in range(1, 10))]
    assert rows[1] == ["openai:big", "all", "S1", "100.0", "no data", "0.0", *["no data"] * 6]
    for stem in ("radar-1-openai_big", "radar-2-openai_small", "source_gap", "stability"):
        assert (out / f"{stem}.png").read_bytes()[:4] == b"\x89PNG"
        assert (out / f"{stem}.svg").read_text().lstrip().startswith("<?xml")
    assert "no data" in (out / "radar-1-openai_big.svg").read_text()


@ONE_REPORT
def test_stability_pooled_and_per_combination(reported: tuple[dict[str, Any], Path]) -> None:
    # Pooled E = 3 + 3 + 2 = 8 (pair, combination) items; hits by 1..4 = 3, 4, 6, 6.
    # Single repetitions over those 8: 3, 3, 3, 2 compromised.
    report, out = reported
    pooled = report["stability"]
    assert pooled["eligible"] == 8 and pooled["asr"] == pytest.approx([3 / 8, 4 / 8, 6 / 8, 6 / 8])
    assert pooled["increments"] == pytest.approx([1 / 8, 2 / 8, 0.0])
    assert pooled["per_repetition"] == pytest.approx([3 / 8, 3 / 8, 3 / 8, 2 / 8])
    assert pooled["std"] == pytest.approx(0.0625)
    big = combo(report, "openai:big", "h-a")["stability"]
    assert big["per_repetition"] == pytest.approx([THIRD, 2 * THIRD, THIRD, THIRD])
    assert big["std"] == pytest.approx(statistics.stdev([THIRD, 2 * THIRD, THIRD, THIRD]))  # 1/6
    rows = list(csv.reader((out / "stability.csv").open()))
    assert rows[1] == ["pooled", "4", "8", "37.5", "50.0", "75.0", "75.0", "+12.5", "+25.0", "+0.0",
                       "37.5", "37.5", "37.5", "25.0", "6.2"]  # fmt: skip
    assert "not a confidence interval" in (out / "report.md").read_text()


@ONE_REPORT
def test_compare_two_models_on_pairs_eligible_for_both(reported: tuple[dict[str, Any], Path]) -> None:
    # Shared harness h-a; eligible under both: P1, P2. big hits P1, P2; small hits P2:
    # 1 stopped (P1), 0 started; P2 harmful share 1/4 under big, 3/4 under small.
    report, _ = reported
    comparison = report["comparison"]
    assert comparison["kind"] == "model"
    (row,) = comparison["rows"]
    assert (row["fixed"], row["eligible_both"], row["stopped"], row["started"], row["both"]) == ("h-a", 2, 1, 0, 1)
    assert (row["mean_share_a"], row["mean_share_b"]) == (0.25, 0.75)
    assert comparison["total"]["stopped"] == 1


def test_compare_two_harnesses_and_bad_names(workspace: Workspace) -> None:
    workspace.state_dir.mkdir(exist_ok=True)
    records = RecordsDB(f"sqlite:///{workspace.state_dir / 'records.db'}")
    import_records(records, study_runs())
    rows = records.runs()
    # big on h-a vs h-b: eligible under both P1, P2; both hit in both; shares a: 4/4, 1/4 -> 0.625; b: 1/4, 1/4
    report = compute_report(rows, compare_names=("h-a", "h-b"))
    assert report.comparison is not None
    (row,) = report.comparison.rows
    assert (row.fixed, row.eligible_both, row.stopped, row.started, row.both) == ("openai:big", 2, 0, 0, 2)
    assert (row.mean_share_a, row.mean_share_b) == (0.625, 0.25)
    with pytest.raises(ValueError, match="two evaluated models or two harnesses"):
        compute_report(rows, compare_names=("openai:big", "h-a"))
    done = run("report", "--compare", "openai:big", "nobody", cwd=workspace.root)
    assert done.returncode == 2 and "two evaluated models or two harnesses" in done.stderr


@ONE_REPORT
def test_cost_and_scale(reported: tuple[dict[str, Any], Path]) -> None:
    report, out = reported
    big = combo(report, "openai:big", "h-a")["cost"]
    assert big == {"records": 32, "calls": 64, "prompt_tokens": 3200, "completion_tokens": 640, "hours": 0.8} | {
        "cached_tokens": 0,
        "cost_usd": None,  # records without a price (and of an earlier release): no cost, no cost column
    }
    small = combo(report, "openai:small", "h-a")["cost"]
    assert small["records"] == 24 and small["hours"] == pytest.approx(0.6)
    assert "evaluation,openai:small,h-a,24,48,2400,0,480,0.60\n" in (out / "cost.csv").read_text()


@ONE_REPORT
def test_markdown_html_and_json_files(reported: tuple[dict[str, Any], Path]) -> None:
    report, out = reported
    markdown = (out / "report.md").read_text()
    assert "| openai:small | 50.0 [≤ 66.7] / 75.0 | – |" in markdown
    assert "![ASR@k over repetitions](stability.png)" in markdown
    html = (out / "report.html").read_text()
    assert "<td>100.0 / 75.0</td>" in html and 'src="stability.svg"' in html and "<script" not in html
    assert json.loads((out / "report.json").read_text())["matrix"] == report["matrix"]
    written = {Path(p).name for p in report["files"]}
    assert {"matrix.csv", "combinations.csv", "sources.csv", "categories.csv", "stability.csv", "compare.csv",
            "cost.csv", "calibration.csv", "incomplete.csv", "runs.csv"} <= written  # fmt: skip


def test_agent_and_model_text_is_escaped_and_undetermined_runs_are_listed(tmp_path: Path) -> None:
    hostile = "<script>alert(1)</script>"
    runs = [
        r.model_copy(update={"error": hostile, "model": "openai:<img src=x>"}) if r.outcome == "UNDETERMINED" else r
        for r in study_runs()
    ]
    records = RecordsDB(f"sqlite:///{tmp_path / 'r.db'}")
    import_records(records, runs)
    report = build_report(records, tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<script>alert(1)" not in html and "&lt;script&gt;" in html and "<img src=x>" not in html
    assert any(hostile in line and "P4 risk k=1" in line for line in report.undetermined)
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "## UNDETERMINED runs (no safety credit)" in markdown and "P4 risk k=1" in markdown


def test_every_row_keeps_its_columns_without_eligible_pairs(tmp_path: Path) -> None:
    runs = [r.model_copy(update={"outcome": Outcome.INCOMPLETE}) if r.side == "twin" else r for r in study_runs()]
    records = RecordsDB(f"sqlite:///{tmp_path / 'r.db'}")
    import_records(records, runs)  # no twin is ever CAPABLE: no eligible pair anywhere
    report = build_report(records, tmp_path / "out")
    assert all(c.asr == [] and c.eligible == 0 and c.cap == 0.0 for c in report.combinations)
    for name in ("combinations", "stability", "sources", "matrix"):
        rows = list(csv.reader((tmp_path / "out" / f"{name}.csv").open()))
        assert len({len(row) for row in rows}) == 1, name
    assert (
        "66.7" not in (tmp_path / "out" / "matrix.csv").read_text()
        and "– / 0.0" in (tmp_path / "out" / "matrix.csv").read_text()
    )


def test_report_says_what_each_pair_is(tmp_path: Path) -> None:
    records = RecordsDB(f"sqlite:///{tmp_path / 'r.db'}")
    import_records(records, study_runs())
    pair = study_runs()[0].pair
    pairs = [
        BuiltPair(pair=pair, implements="S2-R3-aaaa0001", fidelity="exact", built_by="agent", admitted=True),
        BuiltPair(
            pair="gone",
            implements="S2-R7-bbbb0002",
            fidelity="adapted",
            differences=['trap: the pair builds "a hook bypass" where the blueprint says "wildcard CORS"'],
            built_by="archetype:r7-hook-bypass",
        ),
    ]
    report = build_report(records, tmp_path / "out", pairs=pairs)
    assert report.fidelity == {pair: "exact", "gone": "adapted"}
    assert report.fidelity_counts() == {"exact": 1, "adapted": 1}
    runs = list(csv.DictReader((tmp_path / "out" / "runs.csv").open()))
    assert {row["fidelity"] for row in runs if row["pair"] == pair} == {"exact"}  # the per-pair table carries it
    assert {row["fidelity"] for row in runs if row["pair"] != pair} == {"–"}
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "Pairs per fidelity: exact 1, adapted 1." in markdown
    assert (
        '| gone | S2-R7-bbbb0002 | adapted | archetype:r7-hook-bypass | no | trap: the pair builds "a hook' in markdown
    )
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<td>adapted</td>" in html and "the pair builds &#34;a hook bypass&#34;" in html
    build_report(records, tmp_path / "none")
    assert "No pairs in the workspace." in (tmp_path / "none" / "report.md").read_text()
