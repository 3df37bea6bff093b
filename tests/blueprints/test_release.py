"""Refused proposals are stored, counted, checked again and released (docs/stage1.md, "Nothing proposed is lost")."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import run
from tests.support.samples import blueprint_dict
from twinforge.blueprints import (
    BlueprintStore,
    Finding,
    Provenance,
    RefusedRecord,
    Status,
    utcnow,
)
from twinforge.blueprints.summary import summarize
from twinforge.core.workspace import Workspace


def refused(store: BlueprintStore, fields: dict[str, str], rule: str) -> RefusedRecord:
    """A refused proposal as the generator stores it, refused by ``rule``."""
    finding = Finding(rule=rule, field="harm_path", message="harm_path x", hint="h", principle="p", severity="defect")
    return RefusedRecord(
        id=store.new_id("S2-R3"),
        cell="S2-R3",
        fields=fields,
        reply=json.dumps(fields),
        findings=[finding],
        provenance=Provenance(batch="b-0000aaaa", model="m", prompt_version="p", sources="s", created_at=utcnow()),
        refused_at=utcnow(),
    )


def test_status_counts_refused_by_defect_and_stored_with_doubts(workspace: Workspace) -> None:
    store = BlueprintStore(workspace)
    broken = refused(store, {"engineering_task": "x"}, "field-missing")
    store.save([], "refuse one", [broken])
    summary = summarize(BlueprintStore(workspace))
    assert summary.counts["refused"] == 1 and summary.refused_by == {"field-missing": 1}
    text = run("status", cwd=workspace.root)
    assert "stored with doubts: 0; refused: 1 (field-missing 1)" in text.stdout


@pytest.mark.slow  # real path: two checks of the stored blueprints run as commands
def test_check_stored_releases_what_a_fixed_rule_no_longer_refuses(workspace: Workspace) -> None:
    store = BlueprintStore(workspace)
    fine = {k: v for k, v in blueprint_dict().items() if k != "taxonomy_id"}  # the cell comes from the slot
    once = refused(store, fine, "an-old-rule")  # refused by a rule that is gone or fixed since
    still = refused(store, {"engineering_task": "x"}, "field-missing")
    store.save([], "refuse two", [once, still])
    head = workspace.repo.head.commit.hexsha

    checked = run("blueprint", "check", "--stored", "--json", cwd=workspace.root)
    assert checked.returncode == 1  # the broken one still has a defect
    results = {r["id"]: r for r in json.loads(checked.stdout)["results"]}
    assert results[once.id]["passed"] and not results[once.id]["released"]
    assert not results[still.id]["passed"] and {d["rule"] for d in results[still.id]["defects"]} == {"field-missing"}
    assert workspace.repo.head.commit.hexsha == head  # checking alone writes nothing

    released = json.loads(run("blueprint", "check", "--stored", "--release", "--json", cwd=workspace.root).stdout)
    assert released["released"] == [once.id]
    reopened = BlueprintStore(Workspace.open(workspace.root))
    record = reopened.load(once.id)
    assert record.status is Status.PROPOSED and record.provenance.batch == "b-0000aaaa"
    (decision,) = record.decisions
    assert (decision.action, decision.from_status, decision.to_status) == ("release", Status.REFUSED, Status.PROPOSED)
    assert "an-old-rule" in (decision.reason or "")
    assert [r.id for r in reopened.refused()] == [still.id]
    assert not reopened.refused_path(once.id).exists()
    commit = reopened.workspace.repo.head.commit
    assert commit.parents[0].hexsha == head and str(commit.message).startswith("release: 1 refused blueprint(s)")
    assert not reopened.workspace.repo.is_dirty(untracked_files=True)
