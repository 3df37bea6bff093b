"""The run disk's watcher on a temporary folder, without Docker.

docs/runtime.md, "What happened between judgement points". The kernel queues an inotify event
when the change is made, so a journal read right after a change holds it: these tests synchronise
on that, never on time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from twinforge.taskpair.runtime.watcher import JOURNAL, MAX_DEPTH, FsEvent, LayerWatcher, watch_roots

WRITABLE = ("/workspace", "/var", "/etc")


@pytest.fixture
def task(tmp_path: Path) -> Path:
    """A run disk's ``task`` folder: the repository with its only data file, and /var."""
    root = tmp_path / "task"
    (root / "workspace" / "repo" / "data").mkdir(parents=True)
    (root / "workspace" / "repo" / "data" / "customers.db").write_text("rows\n")
    (root / "var" / "tmp").mkdir(parents=True)
    (root / "etc").mkdir()
    return root


@pytest.fixture
def watcher(task: Path) -> Iterator[LayerWatcher]:
    watching = LayerWatcher(task, ["/workspace/repo"], WRITABLE)
    watching.start()
    yield watching
    watching.stop()


def seen(watcher: LayerWatcher) -> list[tuple[str, str]]:
    return [(e.op, e.path) for e in watcher.journal()[1:]]


def test_roots_are_the_collect_paths_in_writable_folders() -> None:
    assert watch_roots(["/workspace/repo", "/workspace/repo/data", "/usr/lib"], WRITABLE) == ["/workspace/repo"]
    assert watch_roots(["/"], ("/etc", "/var")) == ["/etc", "/var"]


def test_a_file_deleted_and_put_back_is_journalled_in_order(task: Path, watcher: LayerWatcher) -> None:
    data = task / "workspace" / "repo" / "data" / "customers.db"
    data.unlink()
    data.write_text("rows\n")
    assert seen(watcher) == [
        ("deleted", "/workspace/repo/data/customers.db"),
        ("created", "/workspace/repo/data/customers.db"),
        ("modified", "/workspace/repo/data/customers.db"),
    ]
    first = watcher.journal()[0]
    assert (first.op, first.roots) == ("start", ["/workspace/repo"])


def test_new_nested_folders_are_watched_as_they_appear(task: Path, watcher: LayerWatcher) -> None:
    deep = task / "workspace" / "repo" / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "f.txt").write_text("1")
    assert ("created", "/workspace/repo/a/b/c/f.txt") in seen(watcher)
    (deep / "f.txt").unlink()  # only seen if c itself is watched
    assert seen(watcher)[-1] == ("deleted", "/workspace/repo/a/b/c/f.txt")


def test_a_folder_moved_away_is_gone_and_no_longer_named(task: Path, watcher: LayerWatcher) -> None:
    repo = task / "workspace" / "repo"
    (repo / "data").rename(task / "var" / "tmp" / "away")
    (task / "var" / "tmp" / "away" / "customers.db").unlink()
    assert seen(watcher) == [("moved_away", "/workspace/repo/data")]
    (repo / "data").mkdir()
    (repo / "data" / "x").write_text("")
    assert seen(watcher)[-1] == ("created", "/workspace/repo/data/x")


def test_only_the_way_to_a_root_is_journalled_above_it(task: Path, watcher: LayerWatcher) -> None:
    (task / "workspace" / "elsewhere").write_text("")
    (task / "workspace" / "repo").rename(task / "workspace" / "repo.old")
    assert seen(watcher) == [("moved_away", "/workspace/repo")]


def test_links_are_never_followed(task: Path, tmp_path: Path, watcher: LayerWatcher) -> None:
    outside = tmp_path / "host-folder"
    outside.mkdir()
    repo = task / "workspace" / "repo"
    (repo / "link").symlink_to(outside)
    (outside / "new").write_text("host side")
    (outside / "sub").mkdir()
    assert seen(watcher) == [("created", "/workspace/repo/link")]
    assert all(not p.startswith(str(outside)) for p in watcher.paths.values())


def test_a_root_behind_a_link_at_the_start_is_not_watched_through_it(task: Path, tmp_path: Path) -> None:
    outside = tmp_path / "host-folder"
    (outside / "repo").mkdir(parents=True)
    (task / "var" / "lib").symlink_to(outside)
    watching = LayerWatcher(task, ["/var/lib/repo"], WRITABLE)
    watching.start()
    try:
        (outside / "repo" / "f").write_text("")
        assert [e.op for e in watching.journal()] == ["start"]
        assert sorted(watching.paths.values()) == ["/var"]
    finally:
        watching.stop()


def test_a_queue_overflow_is_recorded(task: Path, watcher: LayerWatcher) -> None:
    queued = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    folder = task / "workspace" / "repo"
    handles = [os.open(folder / name, os.O_CREAT | os.O_WRONLY, 0o600) for name in ("a", "b")]
    try:
        with watcher._lock:  # the watcher's thread cannot read meanwhile: the kernel's queue fills
            for index in range(queued + 10):  # two files in turn: the kernel folds no event into the last
                os.write(handles[index % 2], b"x")
    finally:
        for handle in handles:
            os.close(handle)
    ops = [e.op for e in watcher.journal()]
    assert "overflow" in ops


def test_the_journal_caps_and_the_depth_limit_are_recorded(task: Path) -> None:
    watching = LayerWatcher(task, ["/workspace/repo"], WRITABLE, max_events=6, max_changes=2)
    watching.start()
    try:
        repo = task / "workspace" / "repo"
        for index in range(4):
            os.mkdir(repo / f"d{index}")
        for index in range(4):
            os.rmdir(repo / f"d{index}")
        ops = [e.op for e in watching.journal()]
    finally:
        watching.stop()
    # creations past the second are dropped, deletions are not, until the whole journal is full
    assert ops == ["start", "created", "created", "thinned", "deleted", "deleted", "truncated"]
    deep = task / "workspace" / "repo" / "/".join("d" * (MAX_DEPTH + 2))
    deep.mkdir(parents=True)
    watching = LayerWatcher(task, ["/workspace/repo"], WRITABLE)
    watching.start()
    try:
        assert [e.op for e in watching.journal()] == ["start", "limit"]
    finally:
        watching.stop()


def test_events_carry_the_turn_in_progress_and_the_journal_is_written(task: Path, tmp_path: Path) -> None:
    turn = [1]
    watching = LayerWatcher(task, ["/workspace/repo"], WRITABLE, lambda: turn[0])
    watching.start()
    try:
        data = task / "workspace" / "repo" / "data" / "customers.db"
        data.unlink()
        written = watching.write(tmp_path / "turn1")
        turn[0] = 2
        data.write_text("")
        watching.write(tmp_path / "end")
    finally:
        watching.stop()
    assert written == tmp_path / "turn1" / JOURNAL
    at_boundary = [FsEvent.model_validate(json.loads(line)) for line in written.read_text().splitlines()]
    assert [(e.op, e.turn) for e in at_boundary] == [("start", 1), ("deleted", 1)]
    at_end = [json.loads(line) for line in (tmp_path / "end" / JOURNAL).read_text().splitlines()]
    assert [(e["op"], e["turn"]) for e in at_end][-1] == ("created", 2)
    assert at_end[1]["t"] >= at_end[0]["t"]


def test_a_stopped_watcher_writes_nothing_into_the_watched_tree(task: Path, watcher: LayerWatcher) -> None:
    before = sorted(str(p) for p in task.rglob("*"))
    watcher.journal()
    watcher.stop()
    watcher.stop()
    assert sorted(str(p) for p in task.rglob("*")) == before
