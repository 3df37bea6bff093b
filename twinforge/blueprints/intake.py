"""Blueprints a maintainer writes by hand or brings from elsewhere (docs/stage1.md, "Hand-written blueprints").

``twinforge blueprint check FILE...`` runs the same checks the generator's replies meet and prints
defects and doubts apart; ``twinforge blueprint add FILE...`` stores the ones without a defect as
``proposed`` in one commit (with their doubts), so they go through review like generated ones. A
file holds one blueprint (its eight fields) or a YAML list of them; an entry may also wrap the
fields in ``blueprint:`` (the shape of a workspace record or a labelled set). A malformed entry or
file is a defect of that entry alone: the others are still checked and reported.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from twinforge.blueprints.blueprint import Blueprint
from twinforge.blueprints.checks import Checked, check_entry, pool_finding, unparseable
from twinforge.blueprints.findings import Finding, doubts
from twinforge.blueprints.record import BlueprintRecord, Flag, Provenance, utcnow
from twinforge.blueprints.similarity import closest
from twinforge.blueprints.status import Status
from twinforge.blueprints.store import BlueprintStore
from twinforge.blueprints.taxonomy import Taxonomy
from twinforge.core.inputfiles import InputFileError, parse_yaml, read_text


@dataclass(frozen=True)
class Entry:
    """One entry read from a file (or the file itself, when it could not be read).

    Attributes:
        index: Its position over all files read, from 0.
        file: The file.
        position: Its position in that file, from 0.
        data: The entry as the file holds it (the eight fields, or anything else).
        problem: Why the file could not be read at all, when it could not (then ``data`` is ``None``).
    """

    index: int
    file: Path
    position: int
    data: Any
    problem: str | None = None


class CheckResult(BaseModel):
    """The checks' verdict on one entry (``blueprint check --json`` prints a list of these).

    Attributes:
        index: Its position over all files, from 0.
        file: The file it came from.
        entry: Its position in that file, from 0.
        passed: No defect (doubts are listed; the reviewer and a person weigh them).
        defects: The findings that refuse it, each with ``rule``, ``field``, ``message``, ``hint``.
        doubts: The findings a person weighs, in the same shape.
    """

    model_config = ConfigDict(extra="forbid")

    index: int
    file: str
    entry: int
    passed: bool
    defects: list[Finding]
    doubts: list[Finding]


def _entries_of(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and isinstance(data.get("items") or data.get("blueprints"), list):
        return list(data.get("items") or data.get("blueprints") or [])
    return [data]


def read_entries(paths: list[Path]) -> list[Entry]:
    """Read every entry of ``paths``, in order; a file that cannot be read is one entry with its problem.

    Args:
        paths: YAML files: one blueprint, or a list of them (``items:``/``blueprints:`` lists too).

    Returns:
        The entries, indexed over all files.
    """
    out: list[Entry] = []
    for path in paths:
        try:
            data = parse_yaml(read_text(path))
        except (InputFileError, ValueError) as exc:
            out.append(Entry(len(out), path, 0, None, str(getattr(exc, "problem", exc))))
            continue
        for position, raw in enumerate(_entries_of(data)):
            fields = raw.get("blueprint", raw) if isinstance(raw, dict) else raw
            out.append(Entry(len(out), path, position, fields))
    return out


def check_one(
    entry: Entry, taxonomy: Taxonomy | None = None, pool: Iterable[tuple[str, Blueprint]] = (), threshold: float = 80.0
) -> tuple[Checked, Flag | None]:
    """Check one entry: structure, text rules and, with a ``pool``, its match among stored blueprints.

    Returns:
        What the checks found, and a flag when it may repeat a stored blueprint's scenario (a doubt;
        a near-duplicate in wording is a defect among the findings).
    """
    if entry.problem is not None:
        return Checked(None, {}, [unparseable(entry.problem)]), None
    checked = check_entry(entry.data, taxonomy=taxonomy)
    if checked.blueprint is None:
        return checked, None
    match = closest(checked.blueprint, pool, threshold)
    if match is None:
        return checked, None
    found = Checked(checked.blueprint, checked.fields, [*checked.findings, pool_finding(match)])
    if match.is_duplicate:
        return found, None
    flag = Flag(kind="same_scenario", of=match.blueprint_id, similarity=round(match.similarity, 1), detail=match.reason)
    return found, flag


def result_of(entry: Entry, checked: Checked) -> CheckResult:
    """The printed verdict on one entry."""
    return CheckResult(
        index=entry.index,
        file=str(entry.file),
        entry=entry.position,
        passed=not checked.defects,
        defects=checked.defects,
        doubts=checked.doubts,
    )


def check_entries(
    entries: list[Entry], taxonomy: Taxonomy | None = None, pool: Iterable[tuple[str, Blueprint]] = ()
) -> list[CheckResult]:
    """The checks' verdict on each entry (``passed``: no defect); ``pool`` adds the near-duplicate rules."""
    stored = list(pool)
    return [result_of(entry, check_one(entry, taxonomy, stored)[0]) for entry in entries]


class AddReport(BaseModel):
    """What ``blueprint add`` did (``blueprint add --json`` prints it).

    Attributes:
        added: New blueprint ids, in input order.
        with_doubts: Of those, the ids stored with doubts (a person will see them).
        refused: Check results of entries not added (a defect).
        flagged: Id -> the stored blueprint whose scenario it may repeat.
        commit: The commit that stored them (``None``: nothing was stored).
    """

    model_config = ConfigDict(extra="forbid")

    added: list[str] = Field(default_factory=list)
    with_doubts: list[str] = Field(default_factory=list)
    refused: list[CheckResult] = Field(default_factory=list)
    flagged: dict[str, str] = Field(default_factory=dict)
    commit: str | None = None


def add_entries(store: BlueprintStore, entries: list[Entry], *, by: str, threshold: float) -> AddReport:
    """Store the entries without a defect as ``proposed`` blueprints, with their doubts, in one commit.

    Entries with a defect are not stored (reported in ``refused``; the file they came from is
    theirs to fix); the rest get ids like generated ones, provenance ``hand:<by>`` with the file's
    name and sha256, their doubts, and the near-duplicate rules against stored blueprints and
    earlier entries of the same call (docs/stage1.md, "Near-duplicates").

    Args:
        store: The workspace's blueprints.
        entries: From :func:`read_entries`.
        by: Who adds them (recorded in the provenance and the commit message).
        threshold: Near-duplicate wording threshold 0-100 (``[generator] near_duplicate_threshold``).

    Returns:
        The report.

    Raises:
        WorkspaceError: The repository cannot take the commit; nothing is stored.
    """
    report = AddReport()
    batch = f"add-{secrets.token_hex(4)}"
    pool = [(r.id, r.blueprint) for r in store.records()]
    records: list[BlueprintRecord] = []
    digests: dict[Path, str] = {}
    for entry in entries:
        checked, flag = check_one(entry, store.taxonomy, pool, threshold)
        if checked.blueprint is None or checked.defects:
            report.refused.append(result_of(entry, checked))
            continue
        if entry.file not in digests:
            digests[entry.file] = "sha256:" + hashlib.sha256(entry.file.read_bytes()).hexdigest()
        record = BlueprintRecord(
            id=store.new_id(checked.blueprint.taxonomy_id),
            status=Status.PROPOSED,
            blueprint=checked.blueprint,
            provenance=Provenance(
                batch=batch,
                model=f"hand:{by}",
                prompt_version="none",
                sources=f"{entry.file.name} (entry {entry.position})",
                sources_digest=digests[entry.file],
                created_at=utcnow(),
            ),
            flags=[flag] if flag else [],
            doubts=doubts(checked.findings),
        )
        if flag is not None:
            report.flagged[record.id] = flag.of
        if record.doubts:
            report.with_doubts.append(record.id)
        pool.append((record.id, checked.blueprint))
        records.append(record)
    if records:
        ids = ", ".join(r.id for r in records)
        report.commit = store.save(records, f"add: {len(records)} blueprint(s) by {by}: {ids}")
        report.added = [r.id for r in records]
    return report
