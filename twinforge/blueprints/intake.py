"""Blueprints a maintainer writes by hand or brings from elsewhere (docs/stage1.md, "Hand-written blueprints").

``twinforge blueprint check FILE...`` runs the same checks the generator's replies meet;
``twinforge blueprint add FILE...`` stores the ones that pass as ``proposed`` in one commit, so they
go through review like generated ones. A file holds one blueprint (its eight fields) or a YAML list
of them; an entry may also wrap the fields in ``blueprint:`` (the shape of a workspace record or a
labelled set).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from twinforge.blueprints.blueprint import Blueprint
from twinforge.blueprints.checks import Finding, check_blueprint
from twinforge.blueprints.exceptions import BlueprintFileError
from twinforge.blueprints.record import BlueprintRecord, Flag, Provenance, utcnow
from twinforge.blueprints.similarity import closest
from twinforge.blueprints.status import Status
from twinforge.blueprints.store import BlueprintStore
from twinforge.blueprints.taxonomy import Taxonomy
from twinforge.core.inputfiles import InputFileError, parse_yaml, read_text
from twinforge.core.llm import describe_validation_error


@dataclass(frozen=True)
class Entry:
    """One blueprint read from a file.

    Attributes:
        index: Its position over all files read, from 0.
        file: The file.
        position: Its position in that file, from 0.
        blueprint: The eight fields.
    """

    index: int
    file: Path
    position: int
    blueprint: Blueprint


class CheckResult(BaseModel):
    """The checks' verdict on one blueprint (``blueprint check --json`` prints a list of these).

    Attributes:
        index: Its position over all files, from 0.
        file: The file it came from.
        passed: No finding refuses it (capping findings are listed and lower its review).
        findings: Every failed rule: ``rule``, ``field``, ``message``, ``hint``, ``severity``, ...
    """

    model_config = ConfigDict(extra="forbid")

    index: int
    file: str
    passed: bool
    findings: list[Finding]


def _entries_of(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and isinstance(data.get("items") or data.get("blueprints"), list):
        return list(data.get("items") or data.get("blueprints") or [])
    return [data]


def read_entries(paths: list[Path], taxonomy: Taxonomy | None = None) -> list[Entry]:
    """Read every blueprint of ``paths``, in order.

    Args:
        paths: YAML files: one blueprint, or a list of them (``items:``/``blueprints:`` lists too).
        taxonomy: Validates ``taxonomy_id`` (default: the bundled taxonomy).

    Returns:
        The blueprints, indexed over all files.

    Raises:
        BlueprintFileError: A file is unreadable, not YAML, or holds an entry that is not a valid
            blueprint; every problem of every file is listed, naming the entry and the field.
    """
    out: list[Entry] = []
    problems: dict[Path, list[str]] = {}
    for path in paths:
        try:
            data = parse_yaml(read_text(path))
        except (InputFileError, ValueError) as exc:
            problems.setdefault(path, []).append(str(getattr(exc, "problem", exc)))
            continue
        for position, raw in enumerate(_entries_of(data)):
            fields = raw.get("blueprint", raw) if isinstance(raw, dict) else raw
            try:
                bp = Blueprint.model_validate(fields, context={"taxonomy": taxonomy} if taxonomy else None)
            except ValidationError as exc:
                problems.setdefault(path, []).extend(
                    f"entry {position}: {line}" for line in describe_validation_error(exc)
                )
                continue
            out.append(Entry(len(out), path, position, bp))
    if problems:
        first = next(iter(problems))
        lines = [f"{p}: {line}" for p, found in problems.items() for line in found]
        raise BlueprintFileError(first, lines if len(problems) > 1 else problems[first])
    return out


def check_entries(entries: list[Entry]) -> list[CheckResult]:
    """The checks' verdict on each entry (``passed``: no refusing finding)."""
    results = []
    for entry in entries:
        findings = check_blueprint(entry.blueprint)
        results.append(
            CheckResult(
                index=entry.index,
                file=str(entry.file),
                passed=not any(f.refuses for f in findings),
                findings=findings,
            )
        )
    return results


class AddReport(BaseModel):
    """What ``blueprint add`` did (``blueprint add --json`` prints it).

    Attributes:
        added: New blueprint ids, in input order.
        refused: Check results of entries not added (a refusing finding).
        flagged: Id -> the near-duplicate it was flagged as.
        commit: The commit that stored them (``None``: nothing was stored).
    """

    model_config = ConfigDict(extra="forbid")

    added: list[str] = Field(default_factory=list)
    refused: list[CheckResult] = Field(default_factory=list)
    flagged: dict[str, str] = Field(default_factory=dict)
    commit: str | None = None


def add_entries(store: BlueprintStore, entries: list[Entry], *, by: str, threshold: float) -> AddReport:
    """Store the entries that pass the checks as ``proposed`` blueprints, in one commit.

    Entries a refusing finding fails are not stored (reported in ``refused``); the rest get ids
    like generated ones, provenance ``hand:<by>`` with the file's name and sha256, and the
    generator's near-duplicate flag against stored blueprints and earlier entries of the same call
    (docs/stage1.md, "Near-duplicates").

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
    results = check_entries(entries)
    batch = f"add-{secrets.token_hex(4)}"
    stored = [(r.id, r.blueprint) for r in store.records()]
    records: list[BlueprintRecord] = []
    digests: dict[Path, str] = {}
    for entry, result in zip(entries, results, strict=True):
        if not result.passed:
            report.refused.append(result)
            continue
        if entry.file not in digests:
            digests[entry.file] = "sha256:" + hashlib.sha256(entry.file.read_bytes()).hexdigest()
        record = BlueprintRecord(
            id=store.new_id(entry.blueprint.taxonomy_id),
            status=Status.PROPOSED,
            blueprint=entry.blueprint,
            provenance=Provenance(
                batch=batch,
                model=f"hand:{by}",
                prompt_version="none",
                sources=f"{entry.file.name} (entry {entry.position})",
                sources_digest=digests[entry.file],
                created_at=utcnow(),
            ),
        )
        match = closest(entry.blueprint, [*stored, *((r.id, r.blueprint) for r in records)], threshold)
        if match is not None:
            record.flags = [
                Flag(kind="near_duplicate", of=match.blueprint_id, similarity=match.similarity, detail=match.reason)
            ]
            report.flagged[record.id] = match.blueprint_id
        records.append(record)
    if records:
        ids = ", ".join(r.id for r in records)
        report.commit = store.save(records, f"add: {len(records)} blueprint(s) by {by}: {ids}")
        report.added = [r.id for r in records]
    return report
