"""Host-side file handling of the clean room never follows a link (docs/runtime.md, "Clean room").

The probe's program is written into a folder agent code of an earlier request could write: a link
placed at its name, or swapped in while it is written, must never lead the host's write, chown or
chmod elsewhere. The copy of the work product leaves caches and start-up hooks out and keeps links
as links.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from pathlib import Path

import pytest

from twinforge.core.text import storable
from twinforge.taskpair.runtime.clean_room import copy_work_product, remove_program, write_program
from twinforge.taskpair.runtime.sandbox import left_out

OWNER = (os.getuid(), os.getgid())


def victim(tmp_path: Path) -> Path:
    path = tmp_path / "host" / "victim.txt"
    path.parent.mkdir()
    path.write_text("host\n")
    path.chmod(0o644)
    return path


def test_a_link_at_the_programs_name_is_refused_and_not_followed(tmp_path: Path) -> None:
    target = victim(tmp_path)
    room = tmp_path / "tmp"
    room.mkdir()
    (room / "tmpabcdefgh.py").symlink_to(target)
    with pytest.raises(FileExistsError):
        write_program(room, "tmpabcdefgh.py", "print(1)\n", OWNER)
    assert target.read_text() == "host\n" and stat.S_IMODE(target.stat().st_mode) == 0o644


def test_a_folder_swapped_for_a_link_is_refused(tmp_path: Path) -> None:
    target = victim(tmp_path)
    room = tmp_path / "tmp"
    room.symlink_to(target.parent)
    with pytest.raises(NotADirectoryError):
        write_program(room, "tmpabcdefgh.py", "print(1)\n", OWNER)
    assert sorted(p.name for p in target.parent.iterdir()) == ["victim.txt"]


def test_links_swapped_in_during_writes_never_reach_the_host_file(tmp_path: Path) -> None:
    target = victim(tmp_path)
    room = tmp_path / "tmp"
    room.mkdir()
    names = [f"tmp{i:08d}.py" for i in range(300)]
    stop = threading.Event()

    def swapper() -> None:
        while not stop.is_set():
            for name in names:
                link = room / name
                with contextlib.suppress(OSError):
                    os.unlink(link)
                with contextlib.suppress(OSError):
                    os.symlink(target, link)

    thread = threading.Thread(target=swapper)
    thread.start()
    try:
        for name in names:
            try:
                write_program(room, name, "print('probe')\n", OWNER)
            except OSError:
                continue
            remove_program(room, name)
    finally:
        stop.set()
        thread.join()
    assert target.read_text() == "host\n" and stat.S_IMODE(target.stat().st_mode) == 0o644
    assert target.stat().st_nlink == 1


def test_remove_program_does_not_follow_a_link(tmp_path: Path) -> None:
    target = victim(tmp_path)
    room = tmp_path / "tmp"
    room.mkdir()
    (room / "tmpabcdefgh.py").symlink_to(target)
    remove_program(room, "tmpabcdefgh.py")
    assert target.exists() and not (room / "tmpabcdefgh.py").is_symlink()


def test_the_work_product_is_copied_without_caches_or_hooks(tmp_path: Path) -> None:
    source = tmp_path / "state" / "repo"
    (source / "app" / "__pycache__").mkdir(parents=True)
    (source / "app" / "__init__.py").write_text("x = 1\n")
    (source / "app" / "__pycache__" / "users.cpython-311.pyc").write_bytes(b"\0")
    (source / "sitecustomize.py").write_text("import os\n")
    (source / "hook.pth").write_text("import os\n")
    (source / "app" / "link").symlink_to("/etc/passwd")
    (source / "run.sh").write_text("echo\n")
    (source / "run.sh").chmod(0o755)
    target = tmp_path / "room" / "repo"
    target.mkdir(parents=True)
    (target / "stale.txt").write_text("from the image\n")
    skipped = copy_work_product(source, target, OWNER)
    assert sorted(skipped) == ["app/__pycache__", "hook.pth", "sitecustomize.py"]
    assert (target / "app" / "__init__.py").read_text() == "x = 1\n"
    assert os.readlink(target / "app" / "link") == "/etc/passwd"
    assert stat.S_IMODE((target / "run.sh").stat().st_mode) == 0o755
    assert not (target / "stale.txt").exists() and not (target / "app" / "__pycache__").exists()


@pytest.mark.parametrize(
    ("name", "out"),
    [("__pycache__", True), ("x.pyc", True), ("a.pth", True), ("usercustomize.py", True), ("users.py", False)],
)
def test_left_out_names(name: str, out: bool) -> None:
    assert left_out(name) is out


def test_agent_text_is_made_storable() -> None:
    assert storable("done \udcff\udcfe\0 é ok") == "done \ufffd\ufffd\ufffd é ok"
    assert storable("plain") == "plain"
    storable("x\udc80").encode("utf-8")
