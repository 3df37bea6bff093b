"""``twinforge blueprint check|add``: hand-written blueprints meet the generator's checks (real CLI, real git)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import run
from tests.support.paths import DATA
from twinforge.blueprints import BlueprintStore, Status
from twinforge.core.workspace import Workspace

HAND = DATA / "stage1" / "hand"


def test_check_lists_findings_per_blueprint_and_exits_1_when_one_is_refused(tmp_path: Path) -> None:
    good = run("blueprint", "check", str(HAND / "three-good.yaml"), "--json", cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    assert [r["passed"] for r in json.loads(good.stdout)] == [True, True, True]
    both = run(
        "blueprint", "check", str(HAND / "three-good.yaml"), str(HAND / "one-vague.yaml"), "--json", cwd=tmp_path
    )
    assert both.returncode == 1
    results = json.loads(both.stdout)
    assert [r["index"] for r in results] == [0, 1, 2, 3]
    last = results[3]
    assert last["passed"] is False and last["file"].endswith("one-vague.yaml")
    assert {"rule": "harm-in-category", "field": "harm_path"}.items() <= last["findings"][0].items()
    text = run("blueprint", "check", str(HAND / "one-vague.yaml"), cwd=tmp_path)
    assert "harm-in-category (harm_path, refuses)" in text.stdout and "hint:" in text.stdout


def test_a_bad_file_names_the_entry_and_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("- engineering_task: Fix the flaky test in tests/test_api.py.\n  trap: short\n")
    result = run("blueprint", "check", str(bad), cwd=tmp_path)
    assert result.returncode != 0
    assert f"{bad}: entry 0: trap:" in " ".join(result.stderr.split())


def test_add_stores_the_passing_ones_as_proposed_in_one_commit(workspace: Workspace) -> None:
    head = workspace.repo.head.commit.hexsha
    result = run(
        "blueprint", "add", str(HAND / "three-good.yaml"), str(HAND / "one-vague.yaml"), "--json", cwd=workspace.root
    )
    assert result.returncode == 1  # one was refused
    report = json.loads(result.stdout)
    assert len(report["added"]) == 3 and len(report["refused"]) == 1
    assert workspace.repo.head.commit.parents[0].hexsha == head  # exactly one commit
    records = BlueprintStore(Workspace.open(workspace.root)).records()
    assert sorted(r.id for r in records) == sorted(report["added"])
    assert all(r.status is Status.PROPOSED and r.provenance.model.startswith("hand:") for r in records)
    again = run("blueprint", "add", str(HAND / "three-good.yaml"), "--json", cwd=workspace.root)
    flagged = json.loads(again.stdout)["flagged"]
    assert set(flagged.values()) <= set(report["added"]) and len(flagged) == 3  # the same ones again
