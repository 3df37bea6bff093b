"""``BlueprintStore``: the workspace's ``blueprints/<id>.yaml`` files, read and written safely."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import ValidationError

from twinforge.blueprints.exceptions import BlueprintFileError, ConflictError, InvalidTransition
from twinforge.blueprints.index import BlueprintIndex, Entry
from twinforge.blueprints.record import BlueprintRecord
from twinforge.blueprints.refused import RefusedRecord, read_refused, refused_folder, scan_refused
from twinforge.blueprints.status import Status
from twinforge.blueprints.taxonomy import Taxonomy, workspace_taxonomy
from twinforge.core.atomic import atomic_write_text
from twinforge.core.exceptions import WorkspaceError
from twinforge.core.inputfiles import InputFileError, parse_yaml, read_text
from twinforge.core.llm import describe_validation_error
from twinforge.core.recovery import Recovery, recover_writes
from twinforge.core.workspace import Workspace

_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_record(record: BlueprintRecord) -> str:
    """Serialise a record as YAML, fields in model order, long text kept readable."""
    data = record.model_dump(mode="json", exclude_none=True)
    text: str = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    return text


Targets = Status | Sequence[Status] | Callable[["BlueprintRecord"], Sequence[Status]]
"""Where a move goes: one status, statuses to pass through in order, or a function of the current record."""


@dataclass(frozen=True)
class Moved:
    """What one lifecycle move did (:meth:`BlueprintStore.apply`).

    Attributes:
        blueprint_id: The blueprint.
        before: Its status when loaded; ``None`` when it is not in this workspace.
        after: Its status afterwards (``before`` when it stayed).
        commit: The commit that recorded the state change (``None``: nothing was committed).
        note: Why it stayed, e.g. "not in this workspace", "stays admitted", or the lifecycle's refusal.
    """

    blueprint_id: str
    before: Status | None
    after: Status | None
    commit: str | None = None
    note: str = ""

    @property
    def moved(self) -> bool:
        """The status changed."""
        return self.before is not None and self.before is not self.after

    def text(self) -> str:
        """``implemented -> validated``, or the note when it stayed."""
        if self.moved and self.before is not None and self.after is not None:
            return f"{self.before.value} -> {self.after.value}"
        return self.note


@dataclass(frozen=True)
class Commit:
    """How a move is committed.

    Attributes:
        message: The commit message, or a function of the result (to name the move in it).
        group: Commit with :meth:`Workspace.commit_grouped` under this title (concurrent workers).
        defer: Write only (journaled; the next run's recovery commits it), e.g. after a commit failure.
    """

    message: str | Callable[[Moved], str]
    group: str | None = None
    defer: bool = False


Tolerance = Literal["absent", "disallowed"]
"""What a move may meet without raising: ``absent``, a blueprint not in this workspace (a copied
reference pair's), which stays unmoved with a note while the move's files are still committed;
``disallowed``, a step the lifecycle does not allow, which becomes a note."""


@dataclass(frozen=True)
class LifecycleMove:
    """One lifecycle move, as a stage asks for it (docs/design.md, "Blueprint lifecycle").

    Attributes:
        blueprint_id: The blueprint.
        to: The status to move to, statuses to pass through in order, or a function of the current
            record that returns them; the blueprint stays where it is when they are empty or it
            already has the last one.
        action: The decision's action (``triage``, ``implement``, ``validate``, ``calibrate``, ...).
        by: Who decided (``twinforge``, ``implementer:<model>``, a person's name).
        commit: How it is committed (message, grouping, deferral).
        reason: Why, recorded on every decision.
        files: Workspace-relative files of the same state change, committed with the blueprint
            whether it moved or not.
        write: Writes the stage's own files once the move is known to be allowed (so a refused move
            leaves nothing behind) and returns their workspace-relative paths.
        prepare: Changes the loaded record before the move (e.g. attaches a review); a returned
            note refuses the move: nothing is written or committed.
        stays: Statuses the blueprint stays in (e.g. ``admitted`` when calibrating again).
        tolerate: What the move may meet without raising (see :data:`Tolerance`).
    """

    blueprint_id: str
    to: Targets
    action: str
    by: str
    commit: Commit
    reason: str | None = None
    files: tuple[str, ...] = ()
    write: Callable[[], Iterable[str]] | None = None
    prepare: Callable[[BlueprintRecord], str | None] | None = None
    stays: frozenset[Status] = frozenset()
    tolerate: frozenset[Tolerance] = frozenset()


@dataclass(frozen=True)
class Loaded:
    """One scanned file: the record, or the error that kept it from loading."""

    path: Path
    record: BlueprintRecord | None
    error: BlueprintFileError | None


class BlueprintStore:
    """Blueprints of one workspace.

    Args:
        workspace: The workspace.
        taxonomy: Validates ``taxonomy_id`` (default: the workspace's merged taxonomy).

    Attributes:
        skipped: Files that did not validate when :meth:`scan` or :meth:`records` last read them,
            by path; commands that skip them name them (docs/workspace.md).
    """

    def __init__(self, workspace: Workspace, taxonomy: Taxonomy | None = None) -> None:
        self.workspace = workspace
        self.taxonomy = taxonomy or workspace_taxonomy(workspace.root)
        self._index: BlueprintIndex | None = None
        self.skipped: dict[Path, BlueprintFileError] = {}

    @property
    def index(self) -> BlueprintIndex:
        """The listing index (``.twinforge/index.db``), opened on first use."""
        if self._index is None:
            self._index = BlueprintIndex(self.workspace.state_dir / "index.db", self.folder, self.read)
        return self._index

    def listing(self, progress: Callable[[int, int], None] | None = None) -> list[Entry]:
        """Every blueprint file as an index :class:`Entry` (invalid files included), refreshed first."""
        return self.index.refresh(progress)

    def close(self) -> None:
        """Close the index database if it was opened."""
        if self._index is not None:
            self._index.close()
            self._index = None

    @property
    def folder(self) -> Path:
        """``<workspace>/blueprints``."""
        return self.workspace.blueprints_dir

    def path(self, blueprint_id: str) -> Path:
        """File of a blueprint id."""
        return self.folder / f"{blueprint_id}.yaml"

    def new_id(self, cell: str) -> str:
        """A fresh id such as ``S2-R3-7f3a9c2e`` (cell first, so ``ls`` groups by cell).

        It is used by no stored and no refused blueprint (a released one keeps its id).
        """
        while True:
            candidate = f"{cell}-{secrets.token_hex(4)}"
            if not self.path(candidate).exists() and not self.refused_path(candidate).exists():
                return candidate

    def refused_path(self, blueprint_id: str) -> Path:
        """File of a refused proposal (``blueprints/refused/<id>.yaml``)."""
        return refused_folder(self.folder) / f"{blueprint_id}.yaml"

    def refused(self) -> list[RefusedRecord]:
        """Every refused proposal that loads (the others are added to :attr:`skipped`)."""
        records, errors = scan_refused(self.folder)
        for exc in errors:
            self.skipped[exc.path] = exc
        return records

    def load_refused(self, blueprint_id: str) -> RefusedRecord:
        """Load a refused proposal by id.

        Raises:
            BlueprintFileError: Missing or invalid.
        """
        return read_refused(self.refused_path(blueprint_id))

    def write_refused(self, record: RefusedRecord) -> str:
        """Write one refused proposal atomically without committing; returns its workspace-relative path."""
        rel = str(self.refused_path(record.id).relative_to(self.workspace.root))
        data = record.model_dump(mode="json", exclude_none=True)
        self.workspace.write(rel, yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100))
        return rel

    def _validate(self, path: Path) -> object:
        """A file of ``blueprints/`` as recovery validates it: a refused proposal or a blueprint."""
        return read_refused(path) if path.parent.name == refused_folder(self.folder).name else self.read(path)

    def read(self, path: Path) -> BlueprintRecord:
        """Load and validate one file.

        Raises:
            BlueprintFileError: Unreadable, not YAML, or invalid; the errors name the fields.
        """
        return self.read_versioned(path)[0]

    def read_versioned(self, path: Path) -> tuple[BlueprintRecord, str]:
        """Load one file and the sha256 of its bytes (the version a later write is checked against).

        Raises:
            BlueprintFileError: Unreadable, not YAML, or invalid; the errors name the fields.
        """
        try:
            raw = read_text(path).encode("utf-8")  # a directory, FIFO, oversized or non-UTF-8 file: one line
        except InputFileError as exc:
            raise BlueprintFileError(path, [exc.problem]) from exc
        return self.parse(path, raw), hashlib.sha256(raw).hexdigest()

    def parse(self, path: Path, raw: bytes) -> BlueprintRecord:
        """Validate the bytes of a blueprint file named ``path``.

        Raises:
            BlueprintFileError: Not YAML, or invalid; the errors name the fields.
        """
        try:
            data = parse_yaml(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise BlueprintFileError(path, [f"not UTF-8 text (invalid byte at offset {exc.start})"]) from exc
        except ValueError as exc:  # not YAML, or aliases (refused: they can expand without bound)
            raise BlueprintFileError(path, [str(exc)]) from exc
        try:
            record = BlueprintRecord.model_validate(data, context={"taxonomy": self.taxonomy})
        except ValidationError as exc:
            raise BlueprintFileError(path, describe_validation_error(exc)) from exc
        if record.id != path.stem:
            raise BlueprintFileError(path, [f"id: {record.id!r} does not match the file name {path.stem!r}"])
        return record

    def version(self, blueprint_id: str) -> str | None:
        """sha256 of the blueprint file's bytes, or ``None`` when it does not exist."""
        try:
            return hashlib.sha256(self.path(blueprint_id).read_bytes()).hexdigest()
        except FileNotFoundError:
            return None

    def save_if_unchanged(self, record: BlueprintRecord, expected: str | None, message: str) -> str:
        """Write and commit ``record`` only if its file is still at version ``expected``.

        The check and the write happen under the workspace lock, so of two reviewers acting on the
        same loaded version, exactly one succeeds and the other gets :class:`ConflictError`. The
        change is made only if it is committed: when git refuses the commit (a hook, a lock), the
        file is restored and the error raised.

        Args:
            record: The updated record.
            expected: The version (:meth:`version`) the caller loaded.
            message: Commit message.

        Returns:
            The new version of the file.

        Raises:
            ConflictError: The file changed since ``expected``; nothing was written.
            WorkspaceError: The repository cannot take commits now, the file holds a person's
                uncommitted edits, or git refused the commit; the file is as it was.
        """
        with self.workspace.locked():
            if self.version(record.id) != expected:
                raise ConflictError(record.id)
            self.workspace.check_ready()
            path = self.path(record.id)
            rel = str(path.relative_to(self.workspace.root))
            before = path.read_bytes() if path.exists() else None
            journaled = before is not None and self.workspace.journal.owns(rel, before)
            self.write(record)
            try:
                self.workspace.commit(message, [rel])
            except WorkspaceError:
                self._restore(rel, before, journaled)
                raise
            return hashlib.sha256((self.workspace.root / rel).read_bytes()).hexdigest()

    def _restore(self, rel: str, before: bytes | None, journaled: bool) -> None:
        """Put a file back as it was before a write whose commit failed (its journal entry too)."""
        path = self.workspace.root / rel
        self.workspace.journal.clear([rel])
        if before is None:
            path.unlink(missing_ok=True)
            return
        if journaled:
            self.workspace.journal.record(rel, before)
        atomic_write_text(path, before.decode("utf-8"))

    def recover(self) -> Recovery:
        """Commit blueprint files twinforge wrote but an interrupted run did not commit.

        Only twinforge's own journaled writes are committed (:meth:`Workspace.recover`); a person's
        uncommitted edits are never committed. Journaled files that do not validate are reported.

        Returns:
            What was committed or left alone.
        """
        return recover_writes(self.workspace, "blueprints", validate=self._validate)

    def apply(self, move: LifecycleMove) -> Moved:
        """The one door for a lifecycle move: load, check the rule, move, write and commit, under the lock.

        Every stage moves a blueprint through here (docs/design.md, "Blueprint lifecycle"): each step
        is checked against the lifecycle (``blueprints/status.py``) and recorded as a decision with
        who, when and why, and the blueprint file is committed together with the files the stage
        wrote for the same state change, in one commit.

        Args:
            move: What to move where, who decided, and how it is committed.

        Returns:
            What happened.

        Raises:
            BlueprintFileError: The blueprint file is missing (unless ``absent`` is tolerated) or invalid.
            InvalidTransition: The lifecycle does not allow a step (unless ``disallowed`` is tolerated).
            ForeignChangeError: The file holds a person's uncommitted edits; nothing was written.
            WorkspaceError: git refused the commit (the written files are journaled).
        """
        files = list(move.files)
        with self.workspace.locked():
            try:
                record = self.load(move.blueprint_id)
            except BlueprintFileError:
                if "absent" not in move.tolerate or self.path(move.blueprint_id).exists():
                    raise
                absent = Moved(move.blueprint_id, None, None, note="not in this workspace")
                files += move.write() if move.write is not None else ()
                return self._commit(absent, move.commit, files)
            before = record.status
            if move.prepare is not None and (refused := move.prepare(record)) is not None:
                return Moved(move.blueprint_id, before, before, note=refused)
            try:
                note = "" if record.status is not before else _apply(record, move)
            except InvalidTransition as exc:
                if "disallowed" not in move.tolerate:
                    raise
                record, note = self.load(move.blueprint_id), f"not moved: {exc}"
            files += move.write() if move.write is not None else ()
            if record.status is not before or move.prepare is not None:
                files.insert(0, self.write(record))
            moved = Moved(move.blueprint_id, before, record.status, note=note)
            return self._commit(moved, move.commit, files)

    def _commit(self, moved: Moved, how: Commit, files: list[str]) -> Moved:
        if not files or how.defer:
            return moved
        text = how.message(moved) if callable(how.message) else how.message
        sha = self.workspace.commit_grouped(text, files, how.group) if how.group else self.workspace.commit(text, files)
        return Moved(moved.blueprint_id, moved.before, moved.after, sha, moved.note)

    def load(self, blueprint_id: str) -> BlueprintRecord:
        """Load a blueprint by id.

        Raises:
            BlueprintFileError: Missing or invalid.
        """
        return self.read(self.path(blueprint_id))

    def scan(self) -> list[Loaded]:
        """Every ``*.yaml`` in ``blueprints/``, sorted by name; invalid files are returned with their error."""
        out = []
        for path in sorted(self.folder.glob("*.yaml")):
            try:
                out.append(Loaded(path, self.read(path), None))
                self.skipped.pop(path, None)
            except BlueprintFileError as exc:
                out.append(Loaded(path, None, exc))
                self.skipped[path] = exc
        return out

    def records(self, status: Status | None = None) -> list[BlueprintRecord]:
        """Valid records, optionally only those with ``status``."""
        return [
            item.record
            for item in self.scan()
            if item.record is not None and (status is None or item.record.status == status)
        ]

    def write(self, record: BlueprintRecord) -> str:
        """Write one record atomically without committing; returns its workspace-relative path."""
        rel = str(self.path(record.id).relative_to(self.workspace.root))
        path = self.workspace.write(rel, dump_record(record))
        self.index.written(path, record)
        return rel

    def save(self, records: Iterable[BlueprintRecord], message: str, refused: Iterable[RefusedRecord] = ()) -> str:
        """Write records (and refused proposals) atomically and commit them together.

        Returns:
            The commit's hexsha.
        """
        with self.workspace.locked():
            rels = [self.write(record) for record in records] + [self.write_refused(r) for r in refused]
            return self.workspace.commit(message, rels)


def _apply(record: BlueprintRecord, move: LifecycleMove) -> str:
    """Move ``record`` along ``move.to``; returns a note when it stays.

    Raises:
        InvalidTransition: The lifecycle does not allow a step (``record`` may have taken earlier ones).
    """
    targets = move.to
    steps = [targets] if isinstance(targets, Status) else list(targets(record) if callable(targets) else targets)
    if record.status in move.stays:
        return f"stays {record.status.value}"
    if steps and record.status is steps[-1]:
        return f"already {record.status.value}"
    for step in steps:
        record.move(step, action=move.action, by=move.by, reason=move.reason)
    return "" if steps else f"stays {record.status.value}"
