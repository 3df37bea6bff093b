"""Watching the task container's writable folders from the host while the agent runs.

docs/runtime.md, "What happened between judgement points": a verdict read from the state at the
freeze alone misses harm that a detached process undid before it (round five's boundary
restorer). The runner therefore watches, with the kernel's inotify, the run disk's folders behind
the side's ``[detector] collect`` paths from the moment the agent starts, and writes what it saw
into the evidence as a journal (``agent/fs-events.jsonl``, one :class:`FsEvent` a line; per
boundary into the boundary's folder too). The detector library answers "was this file gone at any
moment" from it (``Check.ever_gone``).

Rules it keeps:

- it never follows a link: every folder is opened from the run disk's folder one component at a
  time with ``O_NOFOLLOW | O_DIRECTORY``, and the watch is put on the open folder
  (``/proc/self/fd/N``, ``IN_ONLYDIR``), so a link the agent swaps in is never watched through;
- it never writes into the run disk (it only reads folder listings);
- new folders are watched as they appear (their entries found at that moment are recorded as
  created); a folder moved away or deleted stops being watched under its old name;
- what it cannot see is recorded, never dropped: a queue overflow (``overflow``), the watch limit
  (``limit``), the journal cap (``truncated``), a watcher that could not start (``failed``). A
  journal with any of these answers only what it did see; "nothing was gone" then fails closed.
"""

from __future__ import annotations

import errno
import os
import select
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Literal

from inotify_simple import INotify
from inotify_simple import flags as F
from pydantic import BaseModel, ConfigDict

from twinforge.core.atomic import atomic_write_text
from twinforge.core.text import storable

JOURNAL = "fs-events.jsonl"
"""The journal's file name in a judgement point's ``agent/`` folder."""
MAX_EVENTS = 200_000
"""Journal entries kept per run; past that the journal says ``truncated`` (incomplete)."""
MAX_CHANGES = 100_000
"""Creations and modifications kept per run; past that one ``thinned`` line, and only deletions and
moves are recorded (the journal stays complete for them: a flood of writes costs no verdict)."""
MAX_DEPTH = 128
"""Folder depth watched below a watched root; deeper folders make the journal incomplete (``limit``)."""

Op = Literal["start", "created", "deleted", "moved_away", "moved_in", "modified", "thinned"]
_CHANGES = ("created", "moved_in", "modified")
Gap = Literal["overflow", "limit", "truncated", "failed"]
GAPS: tuple[str, ...] = ("overflow", "limit", "truncated", "failed")
"""Journal entries that say the journal may have missed something."""

_MASK = F.CREATE | F.DELETE | F.MOVED_FROM | F.MOVED_TO | F.MODIFY | F.DELETE_SELF | F.ONLYDIR | F.EXCL_UNLINK
"""No ``IN_DONT_FOLLOW``: the watch is put on ``/proc/self/fd/N``, a folder this watcher opened link-free."""
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class FsEvent(BaseModel):
    """One line of the journal.

    Attributes:
        op: What happened (``start`` is the first line: ``roots`` names what was watched;
            ``thinned``: creations and modifications stop being recorded from here on), or a
            gap (``overflow``, ``limit``, ``truncated``, ``failed``: something may be missing).
        path: The container path it happened to (a gap: where, when known).
        t: ``time.monotonic()`` on the host when the watcher read it, seconds (events are read as
            they come; at a judgement point, after the freeze, before the journal is written).
        turn: The user turn in progress then.
        dir: The path is a folder.
        count: Modifications of the same path in a row, folded into one line.
        roots: ``start`` only: the container paths watched (and everything under them).
        detail: Why, for a gap.
    """

    model_config = ConfigDict(extra="forbid")

    op: Op | Gap
    path: str = ""
    t: float
    turn: int
    dir: bool = False
    count: int = 1
    roots: list[str] = []
    detail: str = ""


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def watch_roots(collect: Sequence[str], writable: Sequence[str]) -> list[str]:
    """The container paths to watch (read-only places cannot change, so they are not watched).

    Each collect path inside a writable folder is a root; a collect path above writable folders
    (``/``) stands for the writable folders inside it.
    """
    roots: list[str] = []
    for raw in collect:
        path = "/" + raw.strip("/")
        if any(_within(path, w) for w in writable):
            roots.append(path)
        else:
            roots += [w for w in writable if _within(w, path)]
    return sorted({r for r in roots if not any(r != o and _within(r, o) for o in roots)})


class LayerWatcher:
    """Watches the run disk's folders behind the collect paths and keeps the journal.

    Args:
        task_root: The run disk's folder holding the task container's writable folders
            (``res.disk.root / "task"``; a container path ``/x/y`` is ``task_root / "x/y"``).
        collect: The side's ``[detector] collect`` paths.
        writable: The container's writable folders (each a bind mount of ``task_root / <folder>``).
        turn: Returns the user turn in progress (called from the watcher's thread).
        max_events: Journal entries kept; past that the journal says ``truncated``.
        max_changes: Creations and modifications kept; past that the journal says ``thinned``.
    """

    def __init__(
        self,
        task_root: Path,
        collect: Sequence[str],
        writable: Sequence[str],
        turn: Callable[[], int] = lambda: 1,
        *,
        max_events: int = MAX_EVENTS,
        max_changes: int = MAX_CHANGES,
    ) -> None:
        self.task_root = task_root
        self.writable = tuple("/" + w.strip("/") for w in writable)
        self.roots = watch_roots(collect, self.writable)
        self.turn = turn
        self.max_events = max_events
        self.max_changes = max_changes
        self._changes = 0
        self._truncated = False
        self.t0 = time.monotonic()
        self.events: list[FsEvent] = []
        self.paths: dict[int, str] = {}
        self._lock = threading.Lock()
        self._inotify: INotify | None = None
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = -1, -1
        self._stopping = False

    # the watch set ---------------------------------------------------------------------------------

    def relevant(self, path: str) -> bool:
        """True when ``path`` is a watched root, under one, or on the way to one."""
        return any(_within(path, r) or _within(r, path) for r in self.roots)

    def _open(self, path: str) -> int | None:
        """Open the folder at container ``path`` without following any link (None: not a folder now)."""
        mount = next((w for w in self.writable if _within(path, w)), None)
        if mount is None:
            return None
        fd = os.open(self.task_root / mount.lstrip("/"), _OPEN_DIR)
        try:
            for part in [p for p in path[len(mount) :].split("/") if p]:
                child = os.open(part, _OPEN_DIR, dir_fd=fd)
                os.close(fd)
                fd = child
        except OSError:
            os.close(fd)
            return None
        return fd

    def _watch(self, path: str, *, found: bool, depth: int = 0) -> None:
        """Watch the folder at ``path`` and the relevant folders below it.

        ``found``: a folder that appeared while the agent ran; its entries found now are recorded as created.
        """
        if self._inotify is None:
            return
        if depth > MAX_DEPTH:
            self._record("limit", path, detail=f"deeper than {MAX_DEPTH} folders")
            return
        fd = self._open(path)
        if fd is None:
            return
        try:
            try:
                wd = self._inotify.add_watch(f"/proc/self/fd/{fd}", _MASK)
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    self._record("limit", path, detail="the host's inotify watch limit was reached")
                else:
                    self._record("failed", path, detail=f"cannot watch: {exc}")
                return
            self.paths[wd] = path
            children = []
            with os.scandir(fd) as listing:
                for entry in listing:
                    child = path.rstrip("/") + "/" + entry.name
                    if not self.relevant(child):
                        continue
                    is_dir = entry.is_dir(follow_symlinks=False)
                    if found:
                        self._record("created", child, is_dir=is_dir)
                    if is_dir:
                        children.append(child)
        finally:
            os.close(fd)
        for child in children:
            self._watch(child, found=found, depth=depth + 1)

    def _forget(self, path: str) -> None:
        """Stop watching ``path`` and everything below it (moved away or deleted)."""
        for wd, watched in list(self.paths.items()):
            if _within(watched, path):
                del self.paths[wd]
                if self._inotify is not None:
                    with suppress(OSError):  # already gone with its folder
                        self._inotify.rm_watch(wd)

    # the journal --------------------------------------------------------------------------------

    def _record(self, op: str, path: str, *, is_dir: bool = False, detail: str = "") -> None:
        last = self.events[-1] if self.events else None
        if op == "modified" and last is not None and last.op == "modified" and last.path == path:
            last.count += 1
            return
        if op in _CHANGES and self._changes >= self.max_changes:
            if self._changes > self.max_changes:
                return
            op, path, detail, is_dir = "thinned", "", f"more than {self.max_changes} creations and changes", False
        if op not in GAPS and len(self.events) >= self.max_events:
            if self._truncated:
                return
            self._truncated = True
            op, path, detail, is_dir = "truncated", "", f"more than {self.max_events} entries", False
        if op in _CHANGES or op == "thinned":
            self._changes += 1
        self.events.append(
            FsEvent.model_validate(
                {
                    "op": op,
                    "path": storable(path),
                    "t": time.monotonic(),
                    "turn": self.turn(),
                    "dir": is_dir,
                    "detail": detail,
                }
            )
        )

    def _handle(self, wd: int, mask: int, name: str) -> None:
        if mask & F.Q_OVERFLOW:
            self._record("overflow", "", detail="the kernel's inotify queue overflowed: events were lost")
            return
        folder = self.paths.get(wd)
        if folder is None:
            return
        if mask & F.IGNORED:
            self.paths.pop(wd, None)
            return
        if not name:  # DELETE_SELF: the parent's DELETE names it
            return
        path = folder.rstrip("/") + "/" + name
        if not self.relevant(path):
            return
        is_dir = bool(mask & F.ISDIR)
        if mask & F.CREATE:
            self._record("created", path, is_dir=is_dir)
            if is_dir:
                self._watch(path, found=True)
        elif mask & F.MOVED_TO:
            self._record("moved_in", path, is_dir=is_dir)
            if is_dir:
                self._forget(path)
                self._watch(path, found=True)
        elif mask & F.DELETE:
            self._record("deleted", path, is_dir=is_dir)
            self._forget(path)
        elif mask & F.MOVED_FROM:
            self._record("moved_away", path, is_dir=is_dir)
            self._forget(path)
        elif mask & F.MODIFY:
            self._record("modified", path)

    def _drain(self) -> None:
        """Read and handle every event queued now (the caller holds the lock)."""
        if self._inotify is None:
            return
        while True:
            events = list(self._inotify.read(timeout=0))
            if not events:
                return
            for event in events:
                try:
                    self._handle(event.wd, event.mask, event.name)
                except Exception as exc:  # never a silent hole: the journal says it may miss things
                    self._record("failed", "", detail=f"{type(exc).__name__}: {exc}"[:300])

    # the thread ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Put the watches on (before the agent starts) and read events on a thread until :meth:`stop`.

        Never raises: a watcher that cannot start records ``failed`` (the journal is incomplete).
        """
        with self._lock:
            self.events.append(FsEvent(op="start", t=self.t0, turn=self.turn(), roots=self.roots))
            try:
                self._inotify = INotify()
                for mount in dict.fromkeys(next(w for w in self.writable if _within(r, w)) for r in self.roots):
                    self._watch(mount, found=False)
                self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC)
            except OSError as exc:
                self._record("failed", "", detail=f"the watcher could not start: {exc}")
                return
        self._thread = threading.Thread(target=self._loop, name="layer-watcher", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        if self._inotify is None:
            return
        poller = select.poll()
        poller.register(self._inotify.fileno(), select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        while not self._stopping:
            poller.poll()
            with self._lock:
                if not self._stopping:
                    self._drain()

    def journal(self) -> list[FsEvent]:
        """Every event up to now (call it after the freeze: all the container did is queued by then)."""
        with self._lock:
            self._drain()
            return [e.model_copy() for e in self.events]

    def write(self, folder: Path) -> Path:
        """Write the journal up to now into ``folder`` (a judgement point's ``agent/``), atomically.

        Returns:
            The journal's path.

        Raises:
            OSError: The evidence folder cannot be written.
        """
        with self._lock:
            self._drain()
            lines = "".join(e.model_dump_json() + "\n" for e in self.events)
        target = folder / JOURNAL
        atomic_write_text(target, lines)
        return target

    def stop(self) -> None:
        """Stop reading and drop the watches (idempotent)."""
        with self._lock:
            self._stopping = True
            if self._wake_w >= 0:
                os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            if self._inotify is not None:
                self._inotify.close()
                self._inotify = None
            for fd in (self._wake_r, self._wake_w):
                if fd >= 0:
                    os.close(fd)
            self._wake_r = self._wake_w = -1
