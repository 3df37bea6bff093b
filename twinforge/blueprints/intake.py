"""Blueprints a maintainer writes by hand or brings from elsewhere (docs/stage1.md, "Hand-written blueprints").

``twinforge blueprint check FILE...`` runs the same checks the generator's replies meet and prints
defects and doubts apart; ``twinforge blueprint add FILE...`` stores the ones without a defect as
``proposed`` in one commit (with their doubts), so they go through review like generated ones. A
file holds one blueprint (its eight fields) or a YAML list of them; an entry may also wrap the
fields in ``blueprint:`` (the shape of a workspace record or a labelled set). A multi-turn
blueprint carries its later user turns in ``follow_ups``, beside the eight fields or beside
``blueprint:`` alike; they are checked with the fields (:func:`~twinforge.blueprints.turns.follow_up_findings`,
the checks ``generate --turns N`` applies) and stored with them (docs/stage1.md, "Multi-turn
blueprints"). A malformed entry or file is a defect of that entry alone: the others are still
checked and reported; keys of a record that are not read (``id``, ``review``, ...) are named.
"""

from __future__ import annotations

import dataclasses
import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from twinforge.blueprints.blueprint import Blueprint
from twinforge.blueprints.checks import Checked, check_entry, pool_finding, unparseable
from twinforge.blueprints.findings import Finding, doubts
from twinforge.blueprints.pieces import read_pieces
from twinforge.blueprints.record import BlueprintRecord, Flag, Provenance, utcnow
from twinforge.blueprints.refused import RefusedRecord
from twinforge.blueprints.similarity import closest
from twinforge.blueprints.status import Status
from twinforge.blueprints.store import BlueprintStore
from twinforge.blueprints.taxonomy import Taxonomy
from twinforge.blueprints.turns import FIELD as TURNS_FIELD
from twinforge.blueprints.turns import FollowUp, follow_up_findings, read_follow_ups
from twinforge.core.inputfiles import InputFileError, read_text


@dataclass(frozen=True)
class Entry:
    """One entry read from a file (or the file itself, when it could not be read).

    Attributes:
        index: Its position over all files read, from 0.
        file: The file.
        position: Its position in that file, from 0.
        data: The entry's fields as the file holds them (the eight fields, or anything else).
        problem: Why the file could not be read at all, when it could not (then ``data`` is ``None``).
        follow_ups: The later user turns as the file holds them (``None``: the entry has none).
        turns: The user turns the entry says it has (``turns:`` beside ``blueprint:``), if it says.
        not_read: Keys of a wrapped entry that are not read (a record's ``id``, ``review`` ...).
        text: The entry as the file held it, as text (what a refused proposal keeps as its reply).
    """

    index: int
    file: Path
    position: int
    data: Any
    problem: str | None = None
    text: str = ""
    follow_ups: Any = None
    turns: int | None = None
    not_read: tuple[str, ...] = ()


class CheckResult(BaseModel):
    """The checks' verdict on one entry (``blueprint check --json`` prints a list of these).

    Attributes:
        index: Its position over all files, from 0.
        file: The file it came from.
        entry: Its position in that file, from 0.
        passed: No defect (doubts are listed; the reviewer and a person weigh them).
        defects: The findings that refuse it, each with ``rule``, ``field``, ``message``, ``hint``.
        doubts: The findings a person weighs, in the same shape.
        follow_ups: Its later user turns as far as they validated (empty: a one-turn blueprint).
        not_read: Keys of a wrapped entry that were not read (a record's ``id``, ``review`` ...).
    """

    model_config = ConfigDict(extra="forbid")

    index: int
    file: str
    entry: int
    passed: bool
    defects: list[Finding]
    doubts: list[Finding]
    follow_ups: list[FollowUp] = Field(default_factory=list)
    not_read: list[str] = Field(default_factory=list)


def _entries_of(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and isinstance(data.get("items") or data.get("blueprints"), list):
        return list(data.get("items") or data.get("blueprints") or [])
    return [data]


UNCLASSIFIED = "unclassified"
"""The cell of a refused entry that names no cell of the taxonomy (its id starts with it)."""
_WRAPPER = ("blueprint", TURNS_FIELD, "turns")
"""The keys of a wrapped entry that are read: the eight fields, the later turns, their number."""


def _entry(path: Path, index: int, position: int, raw: Any) -> Entry:
    """One entry: the eight fields apart from the later turns, in either shape."""
    entry = _shaped(path, index, position, raw)
    return dataclasses.replace(entry, text=yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))


def _shaped(path: Path, index: int, position: int, raw: Any) -> Entry:
    if isinstance(raw, dict) and "blueprint" in raw:
        turns = raw.get("turns")
        return Entry(
            index,
            path,
            position,
            raw["blueprint"],
            follow_ups=raw.get(TURNS_FIELD),
            turns=turns if isinstance(turns, int) and not isinstance(turns, bool) else None,
            not_read=tuple(str(k) for k in raw if k not in _WRAPPER),
        )
    if isinstance(raw, dict) and TURNS_FIELD in raw:
        fields = {k: v for k, v in raw.items() if k != TURNS_FIELD}
        return Entry(index, path, position, fields, follow_ups=raw[TURNS_FIELD])
    return Entry(index, path, position, raw)


def read_entries(paths: list[Path]) -> list[Entry]:
    """Read every entry of ``paths``, in order; an entry that cannot be read is one entry with its problem.

    A file that is not valid YAML as a whole is read document by document and list item by list
    item (:func:`~twinforge.blueprints.pieces.read_pieces`): the entries that parse on their own are
    checked, and each broken one is an entry whose problem names the line and column of the error
    and which of the file's entries were checked (docs/stage1.md, "Hand-written blueprints").

    Args:
        paths: YAML files: one blueprint, or a list of them (``items:``/``blueprints:`` lists too),
            or several of these as ``---`` documents.

    Returns:
        The entries, indexed over all files.
    """
    out: list[Entry] = []
    for path in paths:
        try:
            text = read_text(path)
        except InputFileError as exc:
            out.append(Entry(len(out), path, 0, None, exc.problem, ""))
            continue
        out.extend(_file_entries(path, text, len(out)))
    return out


def _file_entries(path: Path, text: str, first: int) -> list[Entry]:
    """One file's entries from its pieces; a broken piece says where and what else was checked."""
    entries: list[Entry] = []
    lines: dict[int, int] = {}
    for piece in read_pieces(text):
        if piece.problem is not None:
            lines[len(entries)] = piece.line
            entries.append(Entry(first + len(entries), path, len(entries), None, piece.problem, piece.text))
            continue
        for raw in _entries_of(piece.value):
            entries.append(_entry(path, first + len(entries), len(entries), raw))
    if not lines:
        return entries
    checked = [str(e.position) for e in entries if e.problem is None]
    said = f"entries {', '.join(checked)} of the file are checked on their own" if checked else "no entry is checked"
    return [
        entry
        if entry.problem is None
        else dataclasses.replace(
            entry,
            problem=f"{entry.problem}; "
            + (f"entry {entry.position} (from line {lines[entry.position]})" if len(entries) > 1 else "the file")
            + f" is not checked, {said}",
        )
        for entry in entries
    ]


def turns_of(entry: Entry, blueprint: Blueprint | None) -> tuple[list[FollowUp], list[Finding]]:
    """An entry's later user turns and what the checks find on them (``generate --turns N``'s checks).

    Turns that do not validate are one ``follow-ups-malformed`` defect; with a blueprint, the turns
    are checked with its fields (count against ``turns:`` when the entry gives it, a twin turn that
    says the same, a repeated turn, a turn repeating the task, an S2 turn asking for the harm).
    """
    if entry.follow_ups is None:
        return [], []
    follow_ups, malformed = read_follow_ups(entry.follow_ups)
    if blueprint is None or malformed:
        return follow_ups, malformed
    return follow_ups, follow_up_findings(blueprint, follow_ups, entry.turns)


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
    turned = turns_of(entry, checked.blueprint)[1]
    if turned:
        checked = Checked(checked.blueprint, checked.fields, [*checked.findings, *turned])
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
        follow_ups=turns_of(entry, None)[0],
        not_read=list(entry.not_read),
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
        refused_ids: The ids they are kept under in ``blueprints/refused/``, in the order of ``refused``.
        flagged: Id -> the stored blueprint whose scenario it may repeat.
        not_read: Id -> keys of its wrapped entry that were not read (a record's ``id``, ``review`` ...).
        commit: The commit that stored them and the refused ones (``None``: nothing was stored).
    """

    model_config = ConfigDict(extra="forbid")

    added: list[str] = Field(default_factory=list)
    with_doubts: list[str] = Field(default_factory=list)
    refused: list[CheckResult] = Field(default_factory=list)
    refused_ids: list[str] = Field(default_factory=list)
    flagged: dict[str, str] = Field(default_factory=dict)
    not_read: dict[str, list[str]] = Field(default_factory=dict)
    commit: str | None = None


def add_entries(store: BlueprintStore, entries: list[Entry], *, by: str, threshold: float) -> AddReport:
    """Store the entries without a defect as ``proposed`` blueprints, with their doubts, in one commit.

    Entries with a defect are kept refused in ``blueprints/refused/`` with their findings and the
    entry as the file held it, in the same commit, as ``generate`` keeps a refused slot
    (docs/stage1.md, "Nothing proposed is lost"; reported in ``refused``); the rest get ids like
    generated ones, provenance ``hand:<by>`` with the file's name and sha256, their doubts and later
    turns, and the near-duplicate rules against stored blueprints and earlier entries of the same
    call (docs/stage1.md, "Near-duplicates").

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
    refused: list[RefusedRecord] = []
    cells = set(store.taxonomy.cells())
    for entry in entries:
        checked, flag = check_one(entry, store.taxonomy, pool, threshold)
        provenance = Provenance(
            batch=batch,
            model=f"hand:{by}",
            prompt_version="none",
            sources=f"{entry.file.name} (entry {entry.position})",
            sources_digest=_digest(entry.file),
            created_at=utcnow(),
        )
        if checked.blueprint is None or checked.defects:
            report.refused.append(result_of(entry, checked))
            cell = checked.fields.get("taxonomy_id", "")
            record_refused = RefusedRecord(
                id=store.new_id(cell if cell in cells else UNCLASSIFIED),
                cell=cell if cell in cells else UNCLASSIFIED,
                fields=checked.fields,
                reply=entry.text,
                findings=checked.findings,
                provenance=provenance,
                refused_at=utcnow(),
                turns=entry.turns or 1,
                follow_ups=turns_of(entry, None)[0],
            )
            refused.append(record_refused)
            report.refused_ids.append(record_refused.id)
            continue
        record = BlueprintRecord(
            id=store.new_id(checked.blueprint.taxonomy_id),
            status=Status.PROPOSED,
            blueprint=checked.blueprint,
            provenance=provenance,
            flags=[flag] if flag else [],
            doubts=doubts(checked.findings),
            follow_ups=turns_of(entry, None)[0],
        )
        if flag is not None:
            report.flagged[record.id] = flag.of
        if record.doubts:
            report.with_doubts.append(record.id)
        if entry.not_read:
            report.not_read[record.id] = list(entry.not_read)
        pool.append((record.id, checked.blueprint))
        records.append(record)
    if records or refused:
        message = f"add: {len(records)} blueprint(s) by {by}: {', '.join(r.id for r in records) or 'none'}"
        if refused:
            message += f"; {len(refused)} refused: {', '.join(r.id for r in refused)}"
        report.commit = store.save(records, message, refused=refused)
        report.added = [r.id for r in records]
    return report


def _digest(path: Path) -> str | None:
    """``sha256:<hex>`` of a file's bytes, or ``None`` when it cannot be read."""
    try:
        return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
