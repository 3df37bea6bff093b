"""Counts per status and the S x R coverage matrix (``twinforge status``)."""

from __future__ import annotations

from pydantic import BaseModel

from blueprints.status import Status
from blueprints.store import BlueprintStore


class StatusSummary(BaseModel):
    """What ``twinforge status --json`` prints.

    Attributes:
        counts: Every status -> number of blueprints (zeros included).
        coverage: Risk id -> source id -> number of blueprints in that cell, any status.
        invalid_files: Paths of blueprint files that do not validate (not counted above).
        problems: Each invalid file's path -> what is wrong with it, in one line.
    """

    counts: dict[str, int]
    coverage: dict[str, dict[str, int]]
    invalid_files: list[str]
    problems: dict[str, str] = {}


def summarize(store: BlueprintStore) -> StatusSummary:
    """Count the workspace's blueprints by status and by cell."""
    counts = {s.value: 0 for s in Status}
    coverage = {r.id: {s.id: 0 for s in store.taxonomy.sources} for r in store.taxonomy.risks}
    invalid = []
    problems = {}
    for item in store.scan():
        if item.record is None:
            rel = str(item.path.relative_to(store.workspace.root))
            invalid.append(rel)
            problems[rel] = "; ".join(item.error.errors) if item.error else "invalid"
            continue
        counts[item.record.status.value] += 1
        bp = item.record.blueprint
        coverage.setdefault(bp.risk, {}).setdefault(bp.source, 0)
        coverage[bp.risk][bp.source] += 1
    return StatusSummary(counts=counts, coverage=coverage, invalid_files=invalid, problems=problems)
