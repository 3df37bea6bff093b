"""``blueprint check --stored``: today's checks on stored blueprints, and releasing refused ones.

A rule fixed after a proposal was refused must be able to give it back (docs/stage1.md, "Nothing
proposed is lost"): each refused proposal is read and checked again as it was stored; one with no
defect left is released to ``proposed`` (same id, its provenance, a ``release`` decision naming what
refused it), so it goes through review like any other. Stored blueprints are checked too: their
doubts are listed, and a defect a newer rule finds is named (a person decides; nothing is moved).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from twinforge.blueprints.blueprint import Blueprint
from twinforge.blueprints.checks import Checked, check_blueprint
from twinforge.blueprints.findings import Finding, defects, doubts
from twinforge.blueprints.intake import Entry, check_one
from twinforge.blueprints.record import BlueprintRecord
from twinforge.blueprints.refused import RefusedRecord
from twinforge.blueprints.status import Status
from twinforge.blueprints.store import BlueprintStore
from twinforge.blueprints.turns import follow_up_findings


class StoredCheck(BaseModel):
    """Today's checks on one stored or refused blueprint (``blueprint check --stored --json``).

    Attributes:
        id: The blueprint.
        status: Its status (``refused`` for a refused proposal).
        passed: No defect.
        defects: The findings that refuse it (for a stored blueprint: found by a newer rule).
        doubts: The findings a person weighs.
        released: A refused proposal released to ``proposed`` by this call.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    status: str
    passed: bool
    defects: list[Finding]
    doubts: list[Finding]
    released: bool = False


class StoredReport(BaseModel):
    """What ``blueprint check --stored`` found and did."""

    model_config = ConfigDict(extra="forbid")

    results: list[StoredCheck] = Field(default_factory=list)
    released: list[str] = Field(default_factory=list)
    commit: str | None = None
    invalid: list[str] = Field(default_factory=list)


def _released(record: RefusedRecord, bp: Blueprint, found: list[Finding], by: str) -> BlueprintRecord:
    refused_by = ", ".join(sorted({f.rule for f in record.defects})) or "no rule"
    out = BlueprintRecord(
        id=record.id,
        status=Status.REFUSED,
        blueprint=bp,
        provenance=record.provenance,
        doubts=doubts(found),
        follow_ups=record.follow_ups,
    )
    out.move(
        Status.PROPOSED,
        action="release",
        by=by,
        reason=f"no defect under today's checks (refused {record.refused_at:%Y-%m-%d} by {refused_by})",
    )
    return out


def check_stored(store: BlueprintStore, *, release: bool, by: str, threshold: float) -> StoredReport:
    """Run today's checks on every stored blueprint and refused proposal; release refused ones if asked.

    Args:
        store: The workspace's blueprints.
        release: Release every refused proposal with no defect left to ``proposed``, in one commit.
        by: Who releases (recorded on the ``release`` decision).
        threshold: Near-duplicate wording threshold 0-100 (``[generator] near_duplicate_threshold``).

    Returns:
        One result per blueprint, refused ones last, and what was released.

    Raises:
        WorkspaceError: The repository cannot take the release commit; nothing is released.
    """
    report = StoredReport()
    stored = store.records()
    for record in stored:
        found = [*check_blueprint(record.blueprint), *follow_up_findings(record.blueprint, record.follow_ups)]
        report.results.append(
            StoredCheck(
                id=record.id,
                status=record.status.value,
                passed=not defects(found),
                defects=defects(found),
                doubts=doubts(found),
            )
        )
    pool = [(r.id, r.blueprint) for r in stored]
    freed: list[BlueprintRecord] = []
    gone: list[str] = []
    for refused in store.refused():
        entry = Entry(0, store.refused_path(refused.id), 0, refused.entry_data())
        checked, flag = check_one(entry, store.taxonomy, pool, threshold)
        if refused.turns > 1 and checked.blueprint is not None:  # the later turns are checked with the fields
            turns = follow_up_findings(checked.blueprint, refused.follow_ups, refused.turns)
            checked = Checked(checked.blueprint, checked.fields, [*checked.findings, *turns])
        passes = checked.blueprint is not None and not checked.defects
        result = StoredCheck(
            id=refused.id,
            status="refused",
            passed=passes,
            defects=checked.defects,
            doubts=checked.doubts,
            released=release and passes,
        )
        report.results.append(result)
        if result.released and checked.blueprint is not None:
            record = _released(refused, checked.blueprint, checked.findings, by)
            record.flags = [flag] if flag else []
            freed.append(record)
            gone.append(str(store.refused_path(refused.id).relative_to(store.workspace.root)))
            pool.append((record.id, checked.blueprint))
    report.invalid = [str(exc) for exc in store.skipped.values()]
    if freed:
        report.commit = _commit_release(store, freed, gone, by)
        report.released = [r.id for r in freed]
    return report


def _commit_release(store: BlueprintStore, records: list[BlueprintRecord], gone: list[str], by: str) -> str:
    with store.workspace.locked():
        rels = [store.write(record) for record in records]
        for rel in gone:
            (store.workspace.root / rel).unlink(missing_ok=True)
        ids = ", ".join(r.id for r in records)
        return store.workspace.commit(f"release: {len(records)} refused blueprint(s) by {by}: {ids}", [*rels, *gone])
