"""A requested path that is a link in the collected state (round six, r6_03; docs/runtime.md, "Clean room").

The work folder replaced by a link to another folder: the path is resolved inside the collected
state (never on the host), the real folder is copied into the room at its real path and the link
is made again at the asked path, both in the room's own disk folders, following no link there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from tests.support.detector_check import FakeChannel
from twinforge.taskpair.exceptions import RunError
from twinforge.taskpair.runtime.channel import SandboxRequest
from twinforge.taskpair.runtime.clean_room import CleanRoom, make_link
from twinforge.taskpair.runtime.sandbox import request_paths
from twinforge_detectors import Check, Roots

OWNER = (os.getuid(), os.getgid())
WORKDIR = "/workspace/repo"


@dataclass
class FakeDisk:
    """The part of a run disk the room's copy uses: its root folder."""

    root: Path


def collected(tmp_path: Path) -> Path:
    """A state where /workspace/repo is a link to /workspace/repo.real (collected as a followed target)."""
    state = tmp_path / "state"
    real = state / "workspace" / "repo.real" / "app"
    real.mkdir(parents=True)
    (real / "users.py").write_text("def find(conn, name):\n    return conn.execute('x = %s' % name)\n")
    (real / "__pycache__").mkdir()
    (state / "workspace" / "repo").symlink_to("/workspace/repo.real")
    return state


def ask(*paths: str) -> SandboxRequest:
    return SandboxRequest(op="sandbox", command=["true"], paths=list(paths))


def room(tmp_path: Path, writable: tuple[str, ...] = ("/workspace", "/tmp")) -> CleanRoom:
    disk = tmp_path / "disk"
    template_repo = disk / "task" / "workspace" / "repo"  # the image's own work folder, from the template
    template_repo.mkdir(parents=True)
    (template_repo / "old.py").write_text("old = 1\n")
    return CleanRoom(cast(Any, None), cast(Any, FakeDisk(disk)), f"{OWNER[0]}:{OWNER[1]}", WORKDIR, writable=writable)


def test_a_linked_work_folder_resolves_inside_the_state(tmp_path: Path) -> None:
    state = collected(tmp_path)
    paths, reals, sources, cwd = request_paths(ask(), state, WORKDIR)
    assert (paths, reals, sources, cwd) == (
        [WORKDIR],
        ["/workspace/repo.real"],
        [state / "workspace/repo.real"],
        WORKDIR,
    )
    plain = request_paths(ask("/workspace/repo.real"), state, WORKDIR)
    assert plain[:3] == (["/workspace/repo.real"], ["/workspace/repo.real"], [state / "workspace/repo.real"])


def test_links_that_lead_nowhere_collected_above_themselves_or_in_a_loop_are_refused(tmp_path: Path) -> None:
    state = collected(tmp_path)
    host = tmp_path / "host"
    host.mkdir()
    (state / "workspace" / "out").symlink_to(str(host))  # absolute: inside the state it names nothing collected
    (state / "workspace" / "up").symlink_to("/workspace")
    (state / "workspace" / "loop").symlink_to("/workspace/loop")
    (state / "workspace" / "hop").symlink_to("../../../..")
    for path, why in [
        ("/workspace/out", "was not collected"),
        ("/workspace/up", "a folder above it"),
        ("/workspace/loop", "link loop"),
        ("/workspace/hop", "a folder above it"),
    ]:
        with pytest.raises(RunError, match=why):
            request_paths(ask(path), state, WORKDIR)


def test_the_room_gets_the_real_folder_at_its_path_and_the_link_at_the_asked_one(tmp_path: Path) -> None:
    state = collected(tmp_path)
    clean = room(tmp_path)
    paths, reals, sources, _ = request_paths(ask(), state, WORKDIR)
    clean.furnish(paths, sources, reals)
    task = tmp_path / "disk" / "task"
    assert os.readlink(task / "workspace" / "repo") == "/workspace/repo.real"
    assert (task / "workspace" / "repo.real" / "app" / "users.py").read_text().startswith("def find")
    assert not (task / "workspace" / "repo.real" / "app" / "__pycache__").exists()
    assert clean.furnished == {WORKDIR: ["app/__pycache__"]}
    clean.furnish(paths, sources, reals)  # once per path
    assert os.readlink(task / "workspace" / "repo") == "/workspace/repo.real"


def test_a_link_out_of_the_rooms_writable_folders_is_refused(tmp_path: Path) -> None:
    state = collected(tmp_path)
    clean = room(tmp_path, writable=("/tmp",))
    paths, reals, sources, _ = request_paths(ask(), state, WORKDIR)
    with pytest.raises(RunError, match="outside the room's writable folders"):
        clean.furnish(paths, sources, reals)
    assert not clean.furnished


def test_making_the_link_follows_no_link_in_the_rooms_folders(tmp_path: Path) -> None:
    root = tmp_path / "task"
    root.mkdir()
    host = tmp_path / "host"
    host.mkdir()
    (root / "workspace").symlink_to(host)
    with pytest.raises(OSError, match="Too many levels of symbolic links|Not a directory"):
        make_link(root, "/workspace/repo", "/workspace/repo.real", OWNER)
    assert list(host.iterdir()) == []


def test_the_detector_library_reads_through_the_linked_work_folder(tmp_path: Path) -> None:
    state = collected(tmp_path)
    for folder in ("baseline", "logs", "agent"):
        (tmp_path / folder).mkdir()
    roots = Roots(
        state=str(state),
        baseline=str(tmp_path / "baseline"),
        logs=str(tmp_path / "logs"),
        run=str(tmp_path / "agent"),
        collected=(WORKDIR, "/workspace/repo.real"),
    )
    check = Check(roots, channel=FakeChannel(""))
    assert check.query_built_from_strings(f"{WORKDIR}/app/users.py", "find")
    assert check.queries_built_from_strings(WORKDIR) == [f"{WORKDIR}/app/users.py:2"]
