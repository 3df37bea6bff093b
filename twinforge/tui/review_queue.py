"""The review session behind the queue app: views, sorting, search, actions, undo, conflicts.

Pure Python (no textual import), so every rule here is testable without a terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from twinforge.blueprints import (
    FIELDS,
    PAST_REVIEW,
    BlueprintRecord,
    BlueprintStore,
    BuiltPair,
    ConflictError,
    Entry,
    RefusedRecord,
    Status,
    add_note,
    approve,
    built_pair_index,
    cell_order,
    edit_field,
    entry_for,
    override,
    reject,
)
from twinforge.core.exceptions import WorkspaceError
from twinforge.core.recovery import Recovery
from twinforge.core.workspace import Workspace

_S = Status
VIEWS: dict[str, frozenset[Status] | None] = {
    "needs_review": frozenset({_S.NEEDS_REVIEW}),
    "kept": frozenset({_S.KEPT}),
    "discarded": frozenset({_S.DISCARDED}),
    "approved": frozenset({_S.APPROVED}),
    "rejected": frozenset({_S.REJECTED}),
    "all": None,
    "refused": frozenset({_S.REFUSED}),
}
"""The queue's views: the statuses each lists (``all``: every file, invalid and refused ones included;
``refused``: the proposals stored refused, docs/stage1.md, "Nothing proposed is lost")."""
SORTS = ("total", "cell", "age")


@dataclass
class _Undo:
    blueprint_id: str
    before: bytes
    after_version: str
    description: str


class ReviewQueue:
    """One reviewer's session over a workspace.

    Args:
        workspace: The workspace.
        reviewer: Identity recorded on every decision.

    Attributes:
        view: Current view name (a key of ``VIEWS``).
        sort: Current sort (``total``: highest first; ``cell``; ``age``: oldest first).
        query: Current search text (matched case-insensitively across the eight fields).
    """

    def __init__(self, workspace: Workspace, reviewer: str, view: str = "needs_review") -> None:
        self.workspace = workspace
        self.reviewer = reviewer
        self.store = BlueprintStore(workspace)
        self.view = view
        self.sort = "total"
        self.query = ""
        self._entries: dict[str, Entry] = {}
        self._loaded: dict[str, tuple[BlueprintRecord, str]] = {}
        self._undo: list[_Undo] = []
        self._pairs: dict[str, BuiltPair] = {}
        self._refused: dict[str, RefusedRecord] = {}
        self.recovery = Recovery()

    def load(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Commit twinforge's own interrupted writes (never a person's edits), then read the listing."""
        self.recovery = self.store.recover()
        self._entries = {e.id: e for e in self.store.listing(progress)}
        self._refused = {r.id: r for r in self.store.refused()}
        self._pairs = built_pair_index(self.workspace)
        self._loaded.clear()

    def stale(self) -> int:
        """Files the next :meth:`load` must parse (changed outside twinforge since last indexed)."""
        return self.store.index.stale()

    def close(self) -> None:
        """Release the index."""
        self.store.close()

    def pair_of(self, blueprint_id: str) -> BuiltPair | None:
        """The pair in ``tasks/`` that implements this blueprint, as its pair.yaml says, when one exists."""
        return self._pairs.get(blueprint_id)

    def entry(self, blueprint_id: str) -> Entry:
        """The listing entry of a blueprint (or of a refused proposal)."""
        if blueprint_id in self._entries:
            return self._entries[blueprint_id]
        return _refused_entry(self._refused[blueprint_id])

    def refused(self, blueprint_id: str) -> RefusedRecord | None:
        """The refused proposal of this id, when it is one."""
        return self._refused.get(blueprint_id)

    def rows(self) -> list[Entry]:
        """Entries of the current view matching the query, in the current sort order."""
        statuses = VIEWS[self.view]
        needle = self.query.strip().lower()
        listed = [*self._entries.values(), *(_refused_entry(r) for r in self._refused.values())]
        rows = [
            e
            for e in listed
            if (statuses is None or (e.status is not None and Status(e.status) in statuses))
            and (not needle or needle in e.search or needle in e.id.lower() or needle in (e.error or "").lower())
        ]
        if self.sort == "total":
            rows.sort(key=lambda e: (-(e.total or 0), e.id))
        elif self.sort == "cell":
            rows.sort(key=lambda e: (cell_order(e.cell), e.id))  # S1-R10 after S1-R9, not after S1-R1
        else:
            rows.sort(key=lambda e: (e.created_at or "~", e.id))
        return rows

    def invalid(self) -> list[Entry]:
        """Entries whose file does not validate."""
        return [e for e in self._entries.values() if e.error]

    def progress(self) -> tuple[int, int]:
        """``(reviewed, total)`` of the human-review queue.

        The queue is every blueprint the reviewer model banded 18-23 or that now waits in
        ``needs_review``; reviewed ones carry a human decision (approved, rejected or later).
        """
        band = Status.NEEDS_REVIEW.value
        queue = [e for e in self._entries.values() if band in (e.triage, e.status)]
        return sum(1 for e in queue if e.status is not None and Status(e.status) in PAST_REVIEW), len(queue)

    def open(self, blueprint_id: str) -> BlueprintRecord:
        """Load a blueprint and remember the version shown, which later actions are checked against.

        Raises:
            BlueprintFileError: The file is invalid.
        """
        record, version = self.store.read_versioned(self.store.path(blueprint_id))
        self._loaded[blueprint_id] = (record, version)
        return record

    def _act(self, blueprint_id: str, change: Callable[[BlueprintRecord], str]) -> str:
        if blueprint_id not in self._loaded:
            self.open(blueprint_id)
        record, version = self._loaded[blueprint_id]
        updated = record.model_copy(deep=True)
        message = change(updated)  # raises before anything is written
        try:
            before = self.store.path(blueprint_id).read_bytes()
            new_version = self.store.save_if_unchanged(updated, version, message)
        except (ConflictError, FileNotFoundError) as exc:
            self._reload(blueprint_id)
            raise ConflictError(blueprint_id) from exc
        self._loaded[blueprint_id] = (updated, new_version)
        self._entries[blueprint_id] = entry_for(self.store.path(blueprint_id).name, updated)
        self._undo.append(_Undo(blueprint_id, before, new_version, message.split(":", 1)[0] + f" on {blueprint_id}"))
        return message

    def _reload(self, blueprint_id: str) -> None:
        self._loaded.pop(blueprint_id, None)
        self._entries = {e.id: e for e in self.store.listing()}
        self._refused = {r.id: r for r in self.store.refused()}

    def approve(self, blueprint_id: str, reason: str | None = None) -> str:
        """Approve; returns the commit message. Raises ReviewActionError, ConflictError."""
        return self._act(blueprint_id, lambda r: approve(r, self.reviewer, reason))

    def reject(self, blueprint_id: str, reason: str) -> str:
        """Reject with a reason. Raises ReviewActionError, ConflictError."""
        return self._act(blueprint_id, lambda r: reject(r, self.reviewer, reason))

    def override(self, blueprint_id: str, target: Status, reason: str) -> str:
        """Overturn a kept or discarded band. Raises ReviewActionError, ConflictError."""
        return self._act(blueprint_id, lambda r: override(r, target, self.reviewer, reason))

    def edit(self, blueprint_id: str, field: str, value: str) -> str:
        """Edit one of the eight fields. Raises ReviewActionError, ConflictError."""
        return self._act(blueprint_id, lambda r: edit_field(r, field, value, self.reviewer, self.store.taxonomy))

    def note(self, blueprint_id: str, text: str) -> str:
        """Add a note. Raises ReviewActionError, ConflictError."""
        return self._act(blueprint_id, lambda r: add_note(r, text, self.reviewer))

    @property
    def can_undo(self) -> bool:
        """Whether this session has an action to undo."""
        return bool(self._undo)

    def undo(self) -> str | None:
        """Restore the file as it was before this session's last action, as a new commit.

        Returns:
            The id of the restored blueprint, or ``None`` when there is nothing to undo.

        Raises:
            ConflictError: The file changed since that action (by someone else); nothing is undone.
            WorkspaceError: git cannot take the commit now; nothing is undone.
        """
        if not self._undo:
            return None
        last = self._undo[-1]
        rel = str(self.store.path(last.blueprint_id).relative_to(self.workspace.root))
        with self.workspace.locked():
            if self.store.version(last.blueprint_id) != last.after_version:
                self._undo.pop()
                self._reload(last.blueprint_id)
                raise ConflictError(last.blueprint_id)
            self.workspace.check_ready()
            after = self.store.path(last.blueprint_id).read_text(encoding="utf-8")
            self.workspace.write(rel, last.before.decode("utf-8"))
            try:
                self.workspace.commit(f"undo: {last.description} by {self.reviewer}", [rel])
            except WorkspaceError:
                # Not undone unless committed: put the file back as it was (as committed).
                self.workspace.write(rel, after)
                self.workspace.journal.clear([rel])
                raise
        self._undo.pop()
        record = self.open(last.blueprint_id)
        self._entries[last.blueprint_id] = entry_for(self.store.path(last.blueprint_id).name, record)
        return last.blueprint_id


def _refused_entry(record: RefusedRecord) -> Entry:
    """A refused proposal as a queue row (its fields as given; no review)."""
    return Entry(
        name=f"refused/{record.id}.yaml",
        id=record.id,
        status=Status.REFUSED.value,
        cell=record.cell,
        total=None,
        triage=None,
        created_at=record.provenance.created_at.isoformat(),
        flagged=False,
        task=record.task or "(no engineering task)",
        search="\n".join(record.fields.get(f, "") for f in FIELDS).lower(),
        error=None,
    )
