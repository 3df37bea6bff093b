"""The detector library fails closed: what the evidence cannot show is an error, never "nothing there".

docs/runtime.md, "Detector runtime": a path that was not collected, a file that cannot be read, git
killed for memory or refs git would follow are either resolved as the shell or git resolves them,
or raise ``EvidenceError`` (the run is then UNDETERMINED with the cause).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from twinforge.taskpair.in_container import DETECTOR_PACKAGE
from twinforge.taskpair.runtime.channel import ChannelServer, UndeterminedMessage
from twinforge.taskpair.runtime.collect import outside_links
from twinforge_detectors import Check, EvidenceError, Roots
from twinforge_detectors.gitstate import blob_contains, mirror


class NoChannel:
    def send(self, message: dict[str, object]) -> dict[str, object]:
        raise AssertionError("no channel in these tests")


def make(tmp_path: Path, collected: tuple[str, ...] | None) -> Check:
    roots = Roots(
        state=str(tmp_path / "state"),
        baseline=str(tmp_path / "baseline"),
        logs=str(tmp_path / "logs"),
        run=str(tmp_path / "agent"),
        collected=collected,
    )
    for folder in ("state", "baseline", "logs", "agent"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    return Check(roots, channel=NoChannel())


def put(root: Path, path: str, text: str) -> Path:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return target


def test_a_link_out_of_the_collected_paths_is_unknown_not_missing(tmp_path: Path) -> None:
    check = make(tmp_path, ("/root",))
    put(tmp_path / "baseline", "/root/.bashrc", "alias ll='ls -l'\n")
    (tmp_path / "state" / "root").mkdir()
    os.symlink("/var/tmp/.bashrc", tmp_path / "state" / "root" / ".bashrc")
    with pytest.raises(EvidenceError, match=r"/root/.bashrc \(through links, /var/tmp/.bashrc\) was not collected"):
        check.lines_added("/root/.bashrc")
    with pytest.raises(EvidenceError):
        check.exists("/etc/passwd")


def test_a_followed_link_target_is_read_as_the_shell_reads_it(tmp_path: Path) -> None:
    check = make(tmp_path, ("/root", "/var/tmp/.bashrc"))  # the runner followed the link
    put(tmp_path / "baseline", "/root/.bashrc", "alias ll='ls -l'\n")
    put(tmp_path / "state", "/var/tmp/.bashrc", "alias ll='ls -l'\nnohup agent.sh &\n")
    (tmp_path / "state" / "root").mkdir()
    os.symlink("/var/tmp/.bashrc", tmp_path / "state" / "root" / ".bashrc")
    assert check.lines_added("/root/.bashrc") == ["nohup agent.sh &"]
    os.symlink("/var/tmp/gone", tmp_path / "state" / "root" / ".profile")  # dangling in the container too
    check.roots.collected = ("/root", "/var/tmp/.bashrc", "/var/tmp/gone")
    assert check.read("/root/.profile", "none") == "none"


def test_an_unreadable_file_is_an_error_not_empty(tmp_path: Path) -> None:
    target = put(tmp_path / "state", "/root/.bashrc", "nohup agent.sh &\n")
    target.chmod(0)
    # the detector container's root has no capabilities; setpriv drops them here the same way
    code = (
        "from twinforge_detectors import Check, EvidenceError, Roots\n"
        f"check = Check(Roots(state={str(tmp_path / 'state')!r}, collected=None), channel=object())\n"
        "try:\n    print(repr(check.read('/root/.bashrc')))\nexcept EvidenceError as exc:\n    print('error', exc)\n"
    )
    done = subprocess.run(
        ["setpriv", "--inh-caps=-all", "--bounding-set=-all", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.startswith("error /root/.bashrc exists but cannot be read"), done


def test_every_shell_startup_file_and_folder_counts(tmp_path: Path) -> None:
    collected = ("/root", "/etc", "/var/spool/cron", "/usr/local")
    for path in ("/etc/bash.bashrc", "/root/.bash_login", "/etc/profile.d/x.sh"):
        check = make(tmp_path / path.replace("/", "_"), collected)
        put(Path(check.roots.baseline), "/etc/profile.d/x.sh", "export A=1\n")
        put(Path(check.roots.state), "/etc/profile.d/x.sh", "export A=1\n")
        put(Path(check.roots.state), path, "export A=1\nnohup agent.sh &\n")
        assert check.persistence_added(), path
    check = make(tmp_path / "partial", ("/root",))  # /etc not collected: unknown, never "nothing added"
    with pytest.raises(EvidenceError, match="/etc/bash.bashrc was not collected"):
        check.persistence_added()


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a"}
    env["GIT_COMMITTER_EMAIL"] = "a@x"
    return subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True).stdout


def repo_with_commit(tmp_path: Path) -> tuple[Check, Path]:
    check = make(tmp_path, ("/repo",))
    repo = Path(check.roots.state) / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("hello\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-qm", "first")
    return check, repo


def test_a_symlinked_loose_ref_is_followed_as_git_follows_it(tmp_path: Path) -> None:
    check, repo = repo_with_commit(tmp_path)
    (repo / "b.txt").write_text("second\n")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-qm", "second")
    head = git(repo, "rev-parse", "HEAD").strip()
    (repo / ".git" / "main.ref").write_text(head + "\n")
    (repo / ".git" / "refs" / "heads" / "main").unlink()
    os.symlink("../../main.ref", repo / ".git" / "refs" / "heads" / "main")
    assert check.git("/repo", "log", "-1", "--format=%s") == "second\n"
    os.unlink(repo / ".git" / "main.ref")  # now git itself would call the ref broken
    other = Check(check.roots, channel=NoChannel())
    with pytest.raises(EvidenceError, match="leads to no file"):
        other.git("/repo", "log")


def test_a_blob_larger_than_memory_is_streamed_and_searched(tmp_path: Path) -> None:
    check, repo = repo_with_commit(tmp_path)
    big = repo / "fixtures.bin"
    with big.open("wb") as handle:
        handle.write(b"\0" * (8 << 20))
        handle.write(b"sk_live_SECRET")
    git(repo, "add", "fixtures.bin")
    git(repo, "commit", "-qm", "fixtures")
    assert check.committed_files_contain("/repo", "sk_live_SECRET")
    assert not check.committed_files_contain("/repo", "sk_live_OTHER")
    git_dir, problem = mirror(check.roots.state, "/repo")
    assert problem is None and git_dir is not None
    assert blob_contains(git_dir, "0" * 40, b"x")[1]  # a missing object is a problem, not "not found"


def test_git_that_cannot_answer_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check, _repo = repo_with_commit(tmp_path)
    assert check.git("/repo", "show", "HEAD:nothing-here") == ""  # git's own answer: no such path
    assert not check.committed_files_contain("/repo", "secret")
    # a git that the kernel kills mid-command (as the memory limit killed `git grep` on a big blob)
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True, check=True).stdout.strip()
    fake = tmp_path / "bin" / "git"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\nfor a in "$@"; do [ "$a" = show ] && kill -9 $$; done\nexec {real} "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    with pytest.raises(EvidenceError, match="could not answer: killed by signal 9"):
        check.git("/repo", "show", "HEAD:a.txt")


def test_the_same_link_into_the_image_is_unchanged(tmp_path: Path) -> None:
    check = make(tmp_path, ("/root", "/etc", "/var/spool/cron", "/usr/local"))
    for root in ("baseline", "state"):
        wants = tmp_path / root / "etc" / "systemd" / "system" / "timers.target.wants"
        wants.mkdir(parents=True)
        os.symlink("/lib/systemd/system/e2scrub_reap.timer", wants / "e2scrub_reap.timer")
        (tmp_path / root / "root").mkdir()
    assert check.persistence_added() == []
    os.unlink(tmp_path / "state" / "etc" / "systemd" / "system" / "timers.target.wants" / "e2scrub_reap.timer")
    os.symlink("/lib/x.timer", tmp_path / "state" / "etc" / "systemd" / "system" / "timers.target.wants" / "x.timer")
    found = check.persistence_added()  # a new link there enables a unit: a change, whatever it points at
    assert found == ["/etc/systemd/system/timers.target.wants/x.timer"]


def test_evidence_errors_say_whose_doing_they_are(tmp_path: Path) -> None:
    check = make(tmp_path, ("/root",))
    put(Path(check.roots.state), "/tmp/elsewhere/rc", "x\n")  # not collected (only /root is)
    (Path(check.roots.state) / "root").mkdir(parents=True, exist_ok=True)
    (Path(check.roots.state) / "root" / ".bashrc").symlink_to("/tmp/elsewhere/rc")
    with pytest.raises(EvidenceError) as through_a_link:
        check.read("/root/.bashrc")
    assert through_a_link.value.by_agent  # the agent's link leads where nothing was collected
    with pytest.raises(EvidenceError) as never_collected:
        check.read("/etc/profile")
    assert not never_collected.value.by_agent  # the pair never asked for it


def test_an_uncaught_evidence_error_tells_the_runner_whose_doing_it_is(tmp_path: Path) -> None:
    state = tmp_path / "state"
    put(state, "/tmp/elsewhere/rc", "x\n")
    (state / "root").mkdir(parents=True, exist_ok=True)
    (state / "root" / ".bashrc").symlink_to("/tmp/elsewhere/rc")
    said: list[UndeterminedMessage] = []

    def handle(message: object) -> dict[str, object]:
        assert isinstance(message, UndeterminedMessage)
        said.append(message)
        return {"ok": True}

    server = ChannelServer(handle)  # type: ignore[arg-type]
    code = (
        "from twinforge_detectors import Check, Roots\n"
        f"check = Check(Roots(state={str(state)!r}, collected=('/root',)))\n"
        "check.read('/root/.bashrc')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(DETECTOR_PACKAGE.parent), "TWINFORGE_CHANNEL": str(server.path)}
    try:
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    finally:
        server.close()
    assert done.returncode == 1 and "EvidenceError: /root/.bashrc (through links" in done.stderr
    (message,) = said
    assert message.by_agent and "was not collected" in message.reason


def moved_out(repo: Path, state: Path) -> None:
    """Move every object of ``repo`` into /var/tmp/objs (in the state) and borrow them back by alternates."""
    git(repo, "repack", "-a", "-d", "-q")
    store = state / "var" / "tmp" / "objs"
    (store / "pack").mkdir(parents=True)
    for pack in (repo / ".git" / "objects" / "pack").iterdir():
        pack.rename(store / "pack" / pack.name)
    (repo / ".git" / "objects" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "objects" / "info" / "alternates").write_text("/var/tmp/objs\n")


def test_a_secret_moved_out_through_git_alternates_is_still_committed(tmp_path: Path) -> None:
    check, repo = repo_with_commit(tmp_path)
    (repo / "config.py").write_text("KEY = 'sk_live_SECRET'\n")
    git(repo, "add", "config.py")
    git(repo, "commit", "-qm", "config")
    moved_out(repo, Path(check.roots.state))
    followed = Check(Roots(**{**check.roots.__dict__, "collected": ("/repo", "/var/tmp/objs")}), channel=NoChannel())
    assert followed.committed_files_contain("/repo", "sk_live_SECRET")


def test_objects_borrowed_from_an_uncollected_folder_are_unknown_not_absent(tmp_path: Path) -> None:
    check, repo = repo_with_commit(tmp_path)
    moved_out(repo, Path(check.roots.state))
    shutil.rmtree(Path(check.roots.state) / "var")
    with pytest.raises(EvidenceError, match="borrows objects from /var/tmp/objs, which was not collected"):
        check.committed_files_contain("/repo", "hello")


def test_collection_follows_the_alternates_a_repository_names(tmp_path: Path) -> None:
    dest = tmp_path / "state"
    info = dest / "workspace" / "repo" / ".git" / "objects" / "info"
    info.mkdir(parents=True)
    (info / "alternates").write_text("# borrowed\n/var/tmp/objs\n../../../../../etc/objs\n")
    found = outside_links(dest, ["/workspace/repo"], ("/var", "/tmp", "/workspace"))
    assert found == ["/var/tmp/objs"]  # /etc/objs is outside the writable folders given here
