from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.support.samples import blueprint_dict
from twinforge.blueprints import (
    FIELDS,
    Blueprint,
    BlueprintFileError,
    BlueprintRecord,
    BlueprintStore,
    InvalidTransition,
    Provenance,
    Status,
    check_transition,
    load_taxonomy,
    utcnow,
)
from twinforge.core.workspace import Workspace


def record(cell: str = "S2-R3") -> BlueprintRecord:
    return BlueprintRecord(
        id=f"{cell}-0000abcd",
        blueprint=Blueprint.model_validate(blueprint_dict(cell)),
        provenance=Provenance(
            batch="b-1", model="scripted", prompt_version="generate@x", sources="s.yaml", created_at=utcnow()
        ),
    )


def test_exactly_eight_fields() -> None:
    assert list(Blueprint.model_fields) == list(FIELDS)
    assert len(FIELDS) == 8
    with pytest.raises(ValidationError, match="extra_forbidden|Extra inputs"):
        Blueprint.model_validate({**blueprint_dict(), "ninth": "field"})
    data = blueprint_dict()
    del data["trap"]
    with pytest.raises(ValidationError, match="trap"):
        Blueprint.model_validate(data)


@pytest.mark.parametrize("bad", ["S3-R1", "S1-R10", "R3-S1", "S2R3", "s2-r3", ""])
def test_taxonomy_id_checked_against_taxonomy(bad: str) -> None:
    with pytest.raises(ValidationError, match="taxonomy_id"):
        Blueprint.model_validate(blueprint_dict(cell=bad))


def test_taxonomy_has_nine_risks_two_sources_with_examples() -> None:
    taxonomy = load_taxonomy()
    assert [r.id for r in taxonomy.risks] == [f"R{i}" for i in range(1, 10)]
    assert [s.id for s in taxonomy.sources] == ["S1", "S2"]
    assert all(c.description and c.example for c in (*taxonomy.risks, *taxonomy.sources))
    assert len(taxonomy.cells()) == 18


def test_taxonomy_from_context_allows_new_category(tmp_path: Path) -> None:
    text = (Path(load_taxonomy.__code__.co_filename).parents[1] / "guidelines/taxonomy.yaml").read_text()
    text += "  - id: R10\n    name: new\n    description: a contributor's category\n    example: an example\n"
    path = tmp_path / "taxonomy.yaml"
    path.write_text(text)
    custom = load_taxonomy(path)
    bp = Blueprint.model_validate(blueprint_dict(cell="S1-R10"), context={"taxonomy": custom})
    assert bp.risk == "R10"
    assert bp.source == "S1"


def test_short_or_blank_field_refused() -> None:
    with pytest.raises(ValidationError, match="safety_cue"):
        Blueprint.model_validate(blueprint_dict(safety_cue="   "))


def test_record_roundtrip_and_commit(workspace: Workspace) -> None:
    store = BlueprintStore(workspace)
    rec = record()
    store.save([rec], "add one")
    assert store.load(rec.id) == rec
    assert workspace.repo.head.commit.message == "add one"


def test_invalid_file_reported_with_path_and_field(workspace: Workspace) -> None:
    store = BlueprintStore(workspace)
    rec = record()
    store.save([rec], "add")
    path = store.path(rec.id)
    path.write_text(path.read_text().replace("taxonomy_id: S2-R3", "taxonomy_id: S9-R3"))
    (store.folder / "broken.yaml").write_text("id: [unclosed\n")
    scanned = {item.path.name: item for item in store.scan()}
    bad = scanned[path.name].error
    assert bad is not None and "blueprint.taxonomy_id" in str(bad) and str(path) in str(bad)
    assert "not valid YAML" in str(scanned["broken.yaml"].error)
    with pytest.raises(BlueprintFileError):
        store.load(rec.id)


def test_id_must_match_file_name(workspace: Workspace) -> None:
    store = BlueprintStore(workspace)
    rec = record()
    store.save([rec], "add")
    store.path(rec.id).rename(store.folder / "other.yaml")
    (item,) = store.scan()
    assert item.error is not None and "does not match the file name" in str(item.error)


def test_lifecycle_transitions() -> None:
    check_transition("x", Status.PROPOSED, Status.KEPT)
    check_transition("x", Status.NEEDS_REVIEW, Status.APPROVED)
    check_transition("x", Status.DISCARDED, Status.APPROVED)  # humans may override any decision
    check_transition("x", Status.CALIBRATION_FAILED, Status.ADMITTED)  # with a justification
    for current, target in [
        (Status.PROPOSED, Status.APPROVED),
        (Status.KEPT, Status.ADMITTED),
        (Status.ADMITTED, Status.PROPOSED),
        (Status.NEEDS_REVIEW, Status.KEPT),
    ]:
        with pytest.raises(InvalidTransition, match=f"from {current.value} to {target.value}"):
            check_transition("x", current, target)


def test_move_records_decision() -> None:
    rec = record()
    decision = rec.move(Status.NEEDS_REVIEW, action="triage", by="reviewer:m", reason="total 20")
    assert rec.status is Status.NEEDS_REVIEW
    assert rec.decisions == [decision]
    assert (decision.from_status, decision.to_status, decision.by) == (
        Status.PROPOSED,
        Status.NEEDS_REVIEW,
        "reviewer:m",
    )


def test_trailing_newline_in_cell_refused() -> None:
    with pytest.raises(ValidationError, match="taxonomy_id"):
        Blueprint.model_validate(blueprint_dict(cell="S1-R1\n"))


def test_recover_commits_valid_leftovers_only(workspace: Workspace) -> None:
    store = BlueprintStore(workspace)
    rec = record()
    store.write(rec)  # written by a run that died before committing
    (store.folder / "S1-R1-00000bad.yaml").write_text("id: [broken\n")
    (store.folder / f".{rec.id}.yaml.abc123.tmp").write_text("half a fi")
    recovery = store.recover()
    assert recovery.sha is not None and recovery.committed == [f"blueprints/{rec.id}.yaml"]
    assert list(workspace.repo.commit(recovery.sha).stats.files) == [f"blueprints/{rec.id}.yaml"]
    # The broken file is not twinforge's write: neither committed nor touched.
    assert (store.folder / "S1-R1-00000bad.yaml").read_text() == "id: [broken\n"
    assert "blueprints/S1-R1-00000bad.yaml" in workspace.repo.untracked_files
    assert not list(store.folder.glob(".*.tmp"))
    assert store.recover().sha is None


def test_non_utf8_blueprint_is_invalid(workspace: Workspace) -> None:
    store = BlueprintStore(workspace)
    rec = record()
    store.save([rec], "add")
    path = store.path(rec.id)
    path.write_bytes(path.read_bytes().replace(b"Fix", b"F\xffx", 1))
    with pytest.raises(BlueprintFileError, match="not UTF-8"):
        store.load(rec.id)
