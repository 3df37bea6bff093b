"""Counts per status and the S x R coverage matrix (``twinforge status``)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from twinforge.blueprints.attention import Attention, attention_sources
from twinforge.blueprints.built import built_pairs, near_duplicate_pairs
from twinforge.blueprints.status import Status
from twinforge.blueprints.store import BlueprintStore
from twinforge.core.exceptions import TwinforgeError
from twinforge.core.workspace import Workspace


def duplicate_pairs(workspace: Workspace) -> list[Attention]:
    """Pairs whose archetype slot fill repeats another pair's of the same cell (docs/implementer.md, "Variety")."""
    threshold = workspace.config.implementer.near_duplicate_slots
    return [
        Attention(
            pair=d.pair,
            kind="near-duplicate",
            detail=f"rendered from {d.built_by} with slot values {d.similarity:.0f}% alike to {d.of}'s",
        )
        for d in near_duplicate_pairs(built_pairs(workspace), threshold)
    ]


def attention(workspace: Workspace) -> list[Attention]:
    """Near-duplicate pairs, then every registered source's findings (a failing source is one ``unreadable`` line)."""
    found: list[Attention] = duplicate_pairs(workspace)
    for source in attention_sources():
        try:
            found += source(workspace)
        except TwinforgeError as exc:
            found.append(Attention(pair="", kind="unreadable", detail=str(exc)))
    return found


class StatusSummary(BaseModel):
    """What ``twinforge status --json`` prints.

    Attributes:
        counts: Every status -> number of blueprints (zeros included); ``refused`` counts the
            refused proposals of ``blueprints/refused/``.
        coverage: Risk id -> source id -> number of blueprints in that cell, any status.
        invalid_files: Paths of blueprint files that do not validate (not counted above).
        attention: Pairs needing a look: near-duplicate archetype pairs (:func:`duplicate_pairs`), and
            (calibrated only with a stand-in model, detector / trajectory disagreements) from the
            sources registered with :func:`add_attention`.
        problems: Each invalid file's path -> what is wrong with it, in one line.
    """

    counts: dict[str, int]
    coverage: dict[str, dict[str, int]]
    invalid_files: list[str]
    attention: list[Attention] = Field(default_factory=list)
    problems: dict[str, str] = {}
    with_doubts: int = 0
    """Stored blueprints that carried doubts when they were stored (a person sees them)."""
    refused_by: dict[str, int] = Field(default_factory=dict)
    """Refused proposals per defect rule (one proposal may count under several)."""
    fidelity: dict[str, int] = Field(default_factory=dict)
    """Pairs in ``tasks/`` by fidelity to their blueprint: ``exact``, ``adapted``, ``by hand`` (no fidelity)."""
    archetypes: dict[str, dict[str, int]] = Field(default_factory=dict)
    """What built the pairs (``archetype:<name>``, ``agent``, ``hand``) -> ``{"pairs", "admitted"}``."""


def pair_spread(workspace: Workspace) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """Fidelity counts and the spread over archetypes of the workspace's pairs (docs/implementer.md, "Fidelity")."""
    fidelity: dict[str, int] = {}
    built: dict[str, dict[str, int]] = {}
    for pair in built_pairs(workspace):
        fidelity[pair.fidelity] = fidelity.get(pair.fidelity, 0) + 1
        row = built.setdefault(pair.built_by, {"pairs": 0, "admitted": 0})
        row["pairs"] += 1
        row["admitted"] += pair.admitted
    return fidelity, built


def summarize(store: BlueprintStore) -> StatusSummary:
    """Count the workspace's blueprints by status and by cell."""
    counts = {s.value: 0 for s in Status}
    coverage = {r.id: {s.id: 0 for s in store.taxonomy.sources} for r in store.taxonomy.risks}
    invalid = []
    problems = {}
    with_doubts = 0
    for item in store.scan():
        if item.record is None:
            rel = str(item.path.relative_to(store.workspace.root))
            invalid.append(rel)
            problems[rel] = "; ".join(item.error.errors) if item.error else "invalid"
            continue
        counts[item.record.status.value] += 1
        with_doubts += bool(item.record.doubts)
        bp = item.record.blueprint
        coverage.setdefault(bp.risk, {}).setdefault(bp.source, 0)
        coverage[bp.risk][bp.source] += 1
    refused_by: dict[str, int] = {}
    for refused in store.refused():
        counts[Status.REFUSED.value] += 1
        for rule in sorted({f.rule for f in refused.defects}):
            refused_by[rule] = refused_by.get(rule, 0) + 1
    for path, exc in store.skipped.items():
        rel = str(path.relative_to(store.workspace.root))
        if rel not in problems:
            invalid.append(rel)
            problems[rel] = "; ".join(exc.errors)
    fidelity, built = pair_spread(store.workspace)
    return StatusSummary(
        counts=counts,
        with_doubts=with_doubts,
        refused_by=dict(sorted(refused_by.items())),
        coverage=coverage,
        invalid_files=invalid,
        problems=problems,
        attention=attention(store.workspace),
        fidelity=fidelity,
        archetypes=built,
    )
