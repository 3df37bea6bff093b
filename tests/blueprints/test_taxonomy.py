from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.samples import blueprint_dict
from twinforge.blueprints import (
    Blueprint,
    BlueprintStore,
    Category,
    TaxonomyError,
    add_category,
    load_taxonomy,
    taxonomy_for,
    workspace_taxonomy,
)
from twinforge.core.workspace import Workspace
from twinforge.taskpair import load_pair
from twinforge.taskpair.format.category import add_risk_category
from twinforge.taskpair.format.spec import SCAFFOLD_MARK
from twinforge.taskpair.gate.static import static_checks

R10 = Category(id="R10", name="unsafe model fine-tuning", description="Training on data the user did not approve.")


def test_workspace_taxonomy_is_the_packaged_one_until_extended(workspace: Workspace) -> None:
    assert workspace_taxonomy(workspace.root) == load_taxonomy()
    add_category(workspace.root, R10)
    merged = workspace_taxonomy(workspace.root)
    assert merged.risk_ids()[-2:] == ["R9", "R10"]
    assert merged.split("S2-R10")[1].name == "unsafe model fine-tuning"
    assert merged.cells()[-2:] == ["S1-R10", "S2-R10"]


def test_extension_cannot_redefine_or_repeat_an_id(workspace: Workspace) -> None:
    with pytest.raises(TaxonomyError, match="R3"):
        add_category(workspace.root, Category(id="R3", name="again", description="A second R3."))
    assert not (workspace.root / "taxonomy.yaml").exists()  # nothing written for a refused entry
    (workspace.root / "taxonomy.yaml").write_text(
        yaml.safe_dump({"risks": [R10.model_dump(), R10.model_dump()]}), encoding="utf-8"
    )
    with pytest.raises(TaxonomyError, match=r"taxonomy.yaml.*R10 is defined twice"):
        workspace_taxonomy(workspace.root)


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"id": "X1", "name": "n", "description": "d"}, "risks.0.id"),
        ({"id": "R01", "name": "n", "description": "d"}, "risks.0.id"),
        ({"id": "R11", "name": " ", "description": "d"}, "risks.0.name"),
        ({"id": "R11", "name": "n"}, "risks.0.description"),
        ({"id": "R11", "name": "n", "description": "d", "colour": "red"}, "risks.0.colour"),
    ],
)
def test_invalid_workspace_entries_name_file_and_field(workspace: Workspace, entry: dict[str, str], field: str) -> None:
    (workspace.root / "taxonomy.yaml").write_text(yaml.safe_dump({"risks": [entry]}), encoding="utf-8")
    with pytest.raises(TaxonomyError) as info:
        workspace_taxonomy(workspace.root)
    assert str(workspace.root / "taxonomy.yaml") in str(info.value)
    assert field in str(info.value)


def test_store_validates_new_cells_against_the_merged_taxonomy(workspace: Workspace) -> None:
    data = blueprint_dict(cell="S1-R10")
    with pytest.raises(ValueError, match="names no cell"):
        Blueprint.model_validate(data, context={"taxonomy": BlueprintStore(workspace).taxonomy})
    add_category(workspace.root, R10)
    store = BlueprintStore(workspace)
    assert "S1-R10" in store.taxonomy.cells()
    assert Blueprint.model_validate(data, context={"taxonomy": store.taxonomy}).risk == "R10"


def test_taxonomy_add_writes_skeletons_in_one_commit(workspace: Workspace) -> None:
    head = workspace.repo.head.commit.hexsha
    added = add_risk_category(workspace, R10)
    commit = workspace.repo.head.commit
    assert commit.parents[0].hexsha == head and commit.hexsha == added.commit
    assert "taxonomy: add R10" in str(commit.message)
    assert {"taxonomy.yaml", "guidelines/implementer/R10.md"} <= set(added.files)
    pair_root = workspace.root / "guidelines/reference-pairs/ref-r10-example"
    pair = load_pair(pair_root)  # pair.yaml's S1-R10 validates against the workspace's taxonomy
    assert pair.spec.blueprint.taxonomy_id == "S1-R10"
    assert taxonomy_for(pair_root).risk_ids()[-1] == "R10"
    detector = (pair_root / "risk/detector/detect.py").read_text()
    assert "from twinforge_detectors import Check" in detector and SCAFFOLD_MARK in detector
    guide = (workspace.root / "guidelines/implementer/R10.md").read_text()
    assert guide.count(SCAFFOLD_MARK) >= 5
    assert not workspace.repo.is_dirty(untracked_files=True)


def test_taxonomy_add_refuses_an_existing_id_and_changes_nothing(workspace: Workspace) -> None:
    add_risk_category(workspace, R10)
    head = workspace.repo.head.commit.hexsha
    before = (workspace.root / "taxonomy.yaml").read_text()
    with pytest.raises(TaxonomyError, match="exists already"):
        add_risk_category(workspace, R10)
    with pytest.raises(TaxonomyError, match="R1"):
        add_risk_category(workspace, Category(id="R1", name="again", description="The packaged R1 again."))
    assert workspace.repo.head.commit.hexsha == head
    assert (workspace.root / "taxonomy.yaml").read_text() == before
    assert not workspace.repo.is_dirty(untracked_files=True)


def test_taxonomy_add_rolls_back_when_a_skeleton_cannot_be_written(workspace: Workspace) -> None:
    blocker = workspace.root / "guidelines/reference-pairs"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("a file where the folder should go\n")  # the pair skeleton cannot be created
    with pytest.raises(OSError, match="reference-pairs"):
        add_risk_category(workspace, R10)
    assert not (workspace.root / "taxonomy.yaml").exists()
    assert not (workspace.root / "guidelines/implementer/R10.md").exists()
    assert workspace_taxonomy(workspace.root).risk_ids()[-1] == "R9"


def test_taxonomy_for_a_folder_outside_any_workspace_is_the_packaged_one(tmp_path: Path) -> None:
    assert taxonomy_for(tmp_path) == load_taxonomy()


def test_the_gate_says_what_to_fill_in_the_skeleton(workspace: Workspace) -> None:
    add_risk_category(workspace, R10)
    pair = load_pair(workspace.root / "guidelines/reference-pairs/ref-r10-example")
    checks = {c.name: c for c in static_checks(pair)}
    left = checks["implemented: no scaffold placeholders left"]
    assert not left.passed
    assert "risk/detector/detect.py: not implemented yet: the risk detector of R10" in left.detail
    assert "pair.yaml: not implemented yet: title of the R10 reference pair" in left.detail
    assert "twin/solution/solve.sh: not implemented yet" in left.detail
