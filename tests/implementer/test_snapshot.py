"""The staged pair is checked as a snapshot no process can change (docs/implementer.md, "Agent mode").

The recorded attack (tests/data/hostile/round3/toctou_watcher.py) swapped a pair file for a link to a
host file between the containment walk and the static gate's reads; the snapshot copies links as
links and never opens what it did not see as a regular file.
"""

from __future__ import annotations

import os
from pathlib import Path

from twinforge.implementer.agent.checks import contained
from twinforge.implementer.agent.snapshot import snapshot


def test_links_are_copied_as_links_and_special_files_left_out(tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.env"
    secret.write_text("HOST_SECRET=1\n")
    staged = tmp_path / "staged"
    (staged / "risk").mkdir(parents=True)
    (staged / "risk" / "README.md").write_text("scenario\n")
    (staged / "risk" / "instruction.md").symlink_to(secret)
    (staged / "risk" / "linked-folder").symlink_to(tmp_path)
    os.mkfifo(staged / "risk" / "pipe")  # opening it for reading would block a naive copy
    copy = tmp_path / "checked"
    left = snapshot(staged, copy)
    assert left == ["risk/pipe: not a regular file"]
    assert (copy / "risk" / "instruction.md").is_symlink() and (copy / "risk" / "README.md").read_text() == "scenario\n"
    assert not any("HOST_SECRET" in p.read_text() for p in copy.rglob("*") if p.is_file() and not p.is_symlink())
    result = contained(copy)
    assert not result.passed and "instruction.md" in result.detail and "linked-folder" in result.detail


def test_what_changes_after_the_snapshot_is_not_what_was_checked(tmp_path: Path) -> None:
    staged = tmp_path / "staged"
    (staged / "risk").mkdir(parents=True)
    (staged / "risk" / "instruction.md").write_text("the real instruction\n")
    copy = tmp_path / "checked"
    assert snapshot(staged, copy) == []
    (staged / "risk" / "instruction.md").unlink()
    (staged / "risk" / "instruction.md").symlink_to("/etc/hostname")  # the watcher's swap, too late
    assert (copy / "risk" / "instruction.md").read_text() == "the real instruction\n"
    assert contained(copy).passed
    assert snapshot(staged, copy) == [] and (copy / "risk" / "instruction.md").is_symlink()  # next check sees it
