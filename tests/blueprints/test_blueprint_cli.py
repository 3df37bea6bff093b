"""``twinforge blueprint check|add``: hand-written blueprints meet the generator's checks (real CLI, real git).

Defects and doubts are printed apart; the command exits 0 when no blueprint has a defect; a
malformed entry is a defect of that entry alone (docs/stage1.md, "Hand-written blueprints").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support.cli import run
from tests.support.paths import DATA
from tests.support.samples import blueprint_dict
from twinforge.blueprints import BlueprintStore, Status
from twinforge.core.workspace import Workspace

HAND = DATA / "stage1" / "hand"


@pytest.mark.slow  # real path: three checks run as commands (seconds each); the fast run keeps the one below
def test_check_prints_defects_and_doubts_apart_and_exits_0_without_a_defect(tmp_path: Path) -> None:
    good = run("blueprint", "check", str(HAND / "three-good.yaml"), "--json", cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    results = json.loads(good.stdout)
    assert [(r["passed"], r["defects"], r["doubts"]) for r in results] == [(True, [], [])] * 3
    vague = run(
        "blueprint", "check", str(HAND / "three-good.yaml"), str(HAND / "one-vague.yaml"), "--json", cwd=tmp_path
    )
    assert vague.returncode == 0  # a doubt never refuses
    last = json.loads(vague.stdout)[3]
    assert last["passed"] is True and last["file"].endswith("one-vague.yaml") and last["defects"] == []
    doubt = next(d for d in last["doubts"] if d["rule"] == "harm-in-category")
    assert {"field": "harm_path", "severity": "doubt"}.items() <= doubt.items() and doubt["message"] and doubt["hint"]
    text = run("blueprint", "check", str(HAND / "one-vague.yaml"), cwd=tmp_path)
    assert "passes, with doubts" in text.stdout and "doubt harm-in-category (harm_path)" in text.stdout


@pytest.mark.slow  # real path: two checks run as commands; intake is tested in process
def test_a_malformed_entry_is_a_defect_of_that_entry_alone(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    good = blueprint_dict(cell="S2-R3")
    entries = [
        {"engineering_task": "Fix the flaky test in tests/test_api.py.", "trap": "short"},
        good,
        "Sure! Here is a blueprint for you.",
        {**blueprint_dict(), "taxonomy_id": "S3-R2"},
    ]
    bad.write_text(yaml.safe_dump(entries, sort_keys=False))
    broken = tmp_path / "broken.yaml"
    broken.write_text("engineering_task: [unclosed\n")
    result = run("blueprint", "check", str(bad), str(broken), "--json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    results = json.loads(result.stdout)
    assert [r["passed"] for r in results] == [False, True, False, False, False]
    rules = [sorted({d["rule"] for d in r["defects"]}) for r in results]
    assert rules == [["field-missing"], [], ["unparseable"], ["taxonomy-unknown"], ["unparseable"]]
    missing = {d["field"] for d in results[0]["defects"]}
    assert {"trap", "safety_cue", "harm_path", "safe_path", "detection_criterion"} <= missing
    text = run("blueprint", "check", str(bad), cwd=tmp_path)
    assert "entry 1: passes" in text.stdout and "defect field-missing (trap)" in text.stdout


def test_a_field_past_its_bound_and_a_pasted_hint_example_are_defects(tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    long = blueprint_dict(harm_path="Run git clean -fdX, deleting data/shop.db. " + "Log line of the run. " * 60)
    pasted = blueprint_dict(safe_path="Delete only build/app.o and rerun make.")
    path.write_text(yaml.safe_dump([long, pasted], sort_keys=False))
    results = json.loads(run("blueprint", "check", str(path), "--json", cwd=tmp_path).stdout)
    assert [[d["rule"] for d in r["defects"]] for r in results] == [["length-bound"], ["pasted-example"]]


@pytest.mark.slow  # real path: two adds run as commands
def test_add_stores_the_ones_without_a_defect_with_their_doubts_in_one_commit(workspace: Workspace) -> None:
    head = workspace.repo.head.commit.hexsha
    broken = workspace.root / "broken.yaml"
    broken.write_text(yaml.safe_dump([{"engineering_task": "Fix the flaky test in tests/test_api.py."}]))
    result = run(
        "blueprint",
        "add",
        str(HAND / "three-good.yaml"),
        str(HAND / "one-vague.yaml"),
        str(broken),
        "--json",
        cwd=workspace.root,
    )
    assert result.returncode == 1  # the broken entry has a defect
    report = json.loads(result.stdout)
    assert len(report["added"]) == 4 and len(report["refused"]) == 1 and len(report["with_doubts"]) == 1
    assert workspace.repo.head.commit.parents[0].hexsha == head  # exactly one commit
    records = {r.id: r for r in BlueprintStore(Workspace.open(workspace.root)).records()}
    assert sorted(records) == sorted(report["added"])
    assert all(r.status is Status.PROPOSED and r.provenance.model.startswith("hand:") for r in records.values())
    (doubted,) = report["with_doubts"]
    assert "harm-in-category" in {f.rule for f in records[doubted].doubts}
    again = run("blueprint", "add", str(HAND / "three-good.yaml"), "--json", cwd=workspace.root)
    repeated = json.loads(again.stdout)
    assert again.returncode == 1 and repeated["added"] == []  # the same three again: near-duplicates
    assert [[d["rule"] for d in r["defects"]] for r in repeated["refused"]] == [["near-duplicate"]] * 3
