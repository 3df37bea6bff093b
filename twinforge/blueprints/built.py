"""What each pair in ``tasks/`` says it is: the blueprint it implements, its fidelity, what built it.

docs/implementer.md, "Fidelity: a pair says what it is". ``status``, the review queue's detail pane
and the report show these; this layer reads ``pair.yaml`` and ``benchmark.yaml`` as plain YAML (it
does not load pairs), and an unreadable file is skipped (``validate`` names it).
"""

from __future__ import annotations

import json
from itertools import combinations

from pydantic import BaseModel, Field
from rapidfuzz import fuzz

from twinforge.core.inputfiles import InputFileError, load_yaml
from twinforge.core.workspace import Workspace

BY_HAND = "by hand"
"""The fidelity of a pair whose pair.yaml says none (written by hand, e.g. the reference pairs)."""


class BuiltPair(BaseModel):
    """One pair as its pair.yaml describes it.

    Attributes:
        pair: The pair's folder name under ``tasks/``.
        implements: The blueprint id it implements (``implements``, else ``blueprint_id``).
        fidelity: ``exact``, ``adapted`` or ``by hand``.
        differences: For ``adapted``: what the pair builds differently, one sentence per field.
        built_by: ``archetype:<name>`` (without its version), ``agent``, ``scaffold``, ``hand`` ...
        cell: The pair's taxonomy cell (``S2-R3``), from its as-built fields.
        slots: An archetype pair's slot fill (slot -> value; empty for other pairs).
        admitted: The pair is in ``benchmark.yaml``.
    """

    pair: str
    implements: str
    fidelity: str = BY_HAND
    differences: list[str] = Field(default_factory=list)
    built_by: str = "hand"
    cell: str = ""
    slots: dict[str, str] = Field(default_factory=dict)
    admitted: bool = False


class PairDuplicate(BaseModel):
    """Two pairs of one archetype and cell whose slot fills are near-identical.

    Attributes:
        pair: The later pair (by folder name).
        of: The earlier pair it repeats.
        built_by: The archetype both were rendered from.
        similarity: Mean rapidfuzz token-set ratio of their slot values, slot by slot (0-100).
    """

    pair: str
    of: str
    built_by: str
    similarity: float


def _admitted(workspace: Workspace) -> set[str]:
    try:
        bench = load_yaml(workspace.root / "benchmark.yaml")
    except InputFileError:
        return set()
    entries = bench.get("pairs") if isinstance(bench, dict) else None
    return {str(e.get("id")) for e in entries or [] if isinstance(e, dict)}  # calibration's AdmissionEntry.id


def built_pairs(workspace: Workspace) -> list[BuiltPair]:
    """Every readable ``tasks/*/pair.yaml`` as a :class:`BuiltPair`, by folder name."""
    admitted = _admitted(workspace)
    out: list[BuiltPair] = []
    for path in sorted(workspace.tasks_dir.glob("*/pair.yaml")):
        try:
            data = load_yaml(path)
        except InputFileError:
            continue
        if not isinstance(data, dict):
            continue
        raw = data.get("provenance")
        provenance: dict[str, object] = raw if isinstance(raw, dict) else {}
        kind = str(provenance.get("kind", "hand"))
        by = str(provenance.get("archetype", "archetype")).split("@")[0] if kind == "archetype" else kind
        differences = data.get("differences")
        fields = data.get("blueprint")
        out.append(
            BuiltPair(
                pair=path.parent.name,
                implements=str(data.get("implements") or data.get("blueprint_id") or ""),
                fidelity=str(data.get("fidelity") or BY_HAND),
                differences=[str(d) for d in differences] if isinstance(differences, list) else [],
                built_by=by,
                cell=str(fields.get("taxonomy_id", "")) if isinstance(fields, dict) else "",
                slots=_slots(provenance.get("slots")),
                admitted=path.parent.name in admitted,
            )
        )
    return out


def _slots(raw: object) -> dict[str, str]:
    """An archetype pair's provenance ``slots`` (a JSON object of strings); anything else is no fill."""
    try:
        data = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def slot_similarity(a: dict[str, str], b: dict[str, str]) -> float:
    """Mean token-set ratio (0-100) of two slot fills, slot by slot over the slots either has.

    Slot by slot rather than over the joined text, so a fill that changes only the project name is
    near-identical while two fills that share common words across different slots are not.
    """
    names = sorted(set(a) | set(b))
    if not names:
        return 0.0
    return sum(float(fuzz.token_set_ratio(a.get(n, "").lower(), b.get(n, "").lower())) for n in names) / len(names)


def near_duplicate_pairs(pairs: list[BuiltPair], threshold: float) -> list[PairDuplicate]:
    """Pairs rendered from one archetype for one cell whose slot fills are near-identical.

    docs/implementer.md, "Variety": such pairs test the same decision in the same scenario with other
    names, so a benchmark counting both counts one scenario twice.

    Args:
        pairs: The workspace's pairs (``built_pairs``).
        threshold: Minimum :func:`slot_similarity` (``[implementer] near_duplicate_slots``).

    Returns:
        One entry per such pair, naming the earlier pair (by folder name) it repeats most closely.
    """
    best: dict[str, PairDuplicate] = {}
    filled = [p for p in pairs if p.slots and p.built_by.startswith("archetype:")]
    for a, b in combinations(sorted(filled, key=lambda p: p.pair), 2):
        if a.built_by != b.built_by or a.cell != b.cell:
            continue
        score = slot_similarity(a.slots, b.slots)
        if score >= threshold and (b.pair not in best or score > best[b.pair].similarity):
            best[b.pair] = PairDuplicate(pair=b.pair, of=a.pair, built_by=b.built_by, similarity=round(score, 1))
    return sorted(best.values(), key=lambda d: d.pair)


def built_pair_index(workspace: Workspace) -> dict[str, BuiltPair]:
    """``{blueprint id: its pair}`` (the first pair by folder name when several name one blueprint)."""
    found: dict[str, BuiltPair] = {}
    for built in built_pairs(workspace):
        found.setdefault(built.implements, built)
    return found
