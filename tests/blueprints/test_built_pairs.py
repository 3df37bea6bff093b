"""What pairs say they are, read back for status, the queue, the report and admit (docs/implementer.md, "Fidelity",
"Variety"): fidelity, what built them, their slot fills, and near-duplicate fills of one archetype."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.support.samples import add_built_pair
from twinforge.blueprints import (
    BlueprintStore,
    built_pair_index,
    built_pairs,
    near_duplicate_pairs,
    slot_similarity,
    summarize,
)
from twinforge.core.workspace import Workspace

FILL = {"project": "inventory-report", "artefact": "app", "data_name": "customers", "data_description": "curated list"}


def test_built_pairs_read_fidelity_builder_cell_slots_and_admission(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws")
    add_built_pair(ws, "S2-R3-aaaa0001", "adapted", ["trap: differs"], archetype="r3-cleanup-wipes-data", slots=FILL)
    add_built_pair(ws, "S1-R9-bbbb0002", "exact", [])
    (ws.tasks_dir / "broken").mkdir()
    (ws.tasks_dir / "broken" / "pair.yaml").write_text("{not yaml")  # skipped; validate names it
    (ws.root / "benchmark.yaml").write_text(yaml.safe_dump({"schema_version": 1, "pairs": [{"id": "s1-r9-bbbb0002"}]}))
    adapted, exact = sorted(built_pairs(ws), key=lambda p: p.fidelity)
    assert adapted.built_by == "archetype:r3-cleanup-wipes-data" and adapted.cell == "S2-R3" and adapted.slots == FILL
    assert adapted.differences == ["trap: differs"] and not adapted.admitted
    assert exact.built_by == "agent" and exact.slots == {} and exact.admitted  # benchmark.yaml entries name the id
    assert set(built_pair_index(ws)) == {"S2-R3-aaaa0001", "S1-R9-bbbb0002"}
    summary = summarize(BlueprintStore(ws))
    assert summary.fidelity == {"adapted": 1, "exact": 1}
    assert summary.archetypes["agent"] == {"pairs": 1, "admitted": 1}


def test_near_identical_fills_of_one_archetype_and_cell_are_flagged(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws")
    r3 = "r3-cleanup-wipes-data"
    add_built_pair(ws, "S2-R3-aaaa0001", "adapted", ["x"], archetype=r3, slots=FILL)
    add_built_pair(ws, "S2-R3-aaaa0002", "adapted", ["x"], archetype=r3, slots={**FILL, "project": "inventory-reports"})
    other = {"project": "photo-gallery", "artefact": "thumbs", "data_name": "uploads", "data_description": "photos"}
    add_built_pair(ws, "S2-R3-aaaa0003", "adapted", ["x"], archetype=r3, slots=other)  # another scenario
    add_built_pair(ws, "S1-R3-aaaa0004", "adapted", ["x"], archetype=r3, slots=FILL)  # another cell: another decision
    pairs = built_pairs(ws)
    (dup,) = near_duplicate_pairs(pairs, threshold=80)
    assert (dup.pair, dup.of, dup.built_by) == ("s2-r3-aaaa0002", "s2-r3-aaaa0001", "archetype:r3-cleanup-wipes-data")
    assert dup.similarity >= 95 and slot_similarity(FILL, other) < 50
    assert near_duplicate_pairs(pairs, threshold=100) == []
    (look,) = summarize(BlueprintStore(ws)).attention
    assert look.pair == "s2-r3-aaaa0002" and look.kind == "near-duplicate" and "s2-r3-aaaa0001" in look.detail
