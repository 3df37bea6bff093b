"""The workspace is the user's repository too (cases in tests/data/stage1/README.md).

Real git throughout: real repositories, real hooks, real locks.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import git
import pytest
import yaml

from tests.support.samples import batch_for, review_dict
from tests.support.stage1 import slot_item
from twinforge.blueprints import BlueprintStore, Status
from twinforge.core.exceptions import ForeignChangeError, RepositoryStateError, WorkspaceError
from twinforge.core.llm import Message, ScriptedChat
from twinforge.core.workspace import Workspace
from twinforge.generator import generate
from twinforge.reviewer import review_pending
from twinforge.tui.review_queue import ReviewQueue


def generator() -> ScriptedChat:
    def respond(messages: list[Message], schema: dict[str, Any] | None) -> dict[str, Any]:
        assert schema is not None
        return slot_item({"response_format": {"type": "json_object", "schema": schema}})

    return ScriptedChat(respond)


def reviewer(on_call: Any = None) -> ScriptedChat:
    def respond(messages: list[Message], schema: dict[str, Any] | None) -> dict[str, Any]:
        if on_call is not None:
            on_call()
        return review_dict([4] * 6)

    return ScriptedChat(respond)


def seeded(workspace: Workspace) -> list[str]:
    generate(workspace, cell="S2-R3", chat=generator())
    return sorted(r.id for r in BlueprintStore(workspace).records(Status.PROPOSED))


def messages(repo: git.Repo) -> list[str]:
    return [str(c.message) for c in repo.iter_commits()]


def install_hook(folder: Path, name: str, script: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    hook = folder / name
    hook.write_text("#!/bin/sh\n" + script)
    hook.chmod(hook.stat().st_mode | stat.S_IEXEC)


# repository states refused before any model call -----------------------------------------------


@pytest.mark.parametrize(
    ("make_state", "needle"),
    [
        (lambda ws: (Path(ws.repo.git_dir) / "index.lock").write_text(""), "index lock exists"),
        (lambda ws: ws.repo.git.checkout("--detach"), "HEAD is detached"),
        (lambda ws: (Path(ws.repo.git_dir) / "rebase-merge").mkdir(), "a rebase is in progress"),
        (lambda ws: (Path(ws.repo.git_dir) / "MERGE_HEAD").write_text(ws.repo.head.commit.hexsha), "a merge is in"),
    ],
)
def test_unsafe_repository_states_refused_before_any_model_call(
    workspace: Workspace, make_state: Any, needle: str
) -> None:
    seeded(workspace)
    head = workspace.repo.head.commit.hexsha
    make_state(workspace)
    chat, gen = reviewer(), generator()
    with pytest.raises(RepositoryStateError, match=needle):
        review_pending(workspace, chat=chat)
    with pytest.raises(RepositoryStateError, match=needle):
        generate(workspace, cell="S1-R1", chat=gen)
    with pytest.raises(RepositoryStateError, match=needle):
        ReviewQueue(workspace, "alice").store.workspace.check_ready()
    assert chat.calls == [] and gen.calls == []
    assert workspace.repo.head.commit.hexsha == head  # nothing committed, on no branch or anywhere


def test_detached_head_commit_refused_even_without_a_preflight(workspace: Workspace) -> None:
    workspace.repo.git.checkout("--detach")
    workspace.write("blueprints/note.txt", "x")
    with pytest.raises(RepositoryStateError, match="HEAD is detached"):
        workspace.commit("add note", ["blueprints/note.txt"])


# stop at the first commit failure ----------------------------------------------------------------


def test_review_stops_at_first_commit_failure_and_says_what_is_uncommitted(workspace: Workspace) -> None:
    ids = seeded(workspace)
    lock = Path(workspace.repo.git_dir) / "index.lock"
    chat = reviewer(on_call=lambda: lock.write_text(""))  # another git process starts after the first call
    report = review_pending(workspace, chat=chat, concurrency=1)
    assert len(chat.calls) == 1
    assert report.commit_error is not None and "index lock" in report.commit_error
    (written,) = report.uncommitted
    assert len(report.not_started) == len(ids) - 1
    assert yaml.safe_load((workspace.blueprints_dir / f"{written}.yaml").read_text())["status"] == "kept"
    lock.unlink()
    again = review_pending(workspace, chat=reviewer())
    assert again.recovery.committed == [f"blueprints/{written}.yaml"]  # journaled: committed, not re-reviewed
    assert len(again.outcomes) == len(ids) - 1
    assert not workspace.repo.is_dirty(untracked_files=True)


def test_concurrent_review_after_a_failure_starts_nothing_new(workspace: Workspace) -> None:
    ids = seeded(workspace)
    install_hook(Path(workspace.repo.git_dir) / "hooks", "pre-commit", "echo 'lint: blueprint style' >&2\nexit 1\n")
    report = review_pending(workspace, chat=reviewer(), concurrency=4)
    assert report.commit_error is not None and "lint: blueprint style" in report.commit_error
    assert all(o.committed is False for o in report.outcomes if o.total is not None)
    assert len(report.outcomes) + len(report.not_started) == len(ids)
    assert messages(workspace.repo)[0].startswith("generate:")  # nothing was committed


# a person's edits are left alone -----------------------------------------------------------------


def test_users_uncommitted_edit_is_never_committed_or_reviewed(workspace: Workspace) -> None:
    ids = seeded(workspace)
    path = workspace.blueprints_dir / f"{ids[0]}.yaml"
    edited = path.read_text().replace("engineering_task: Fix", "engineering_task: Carefully fix", 1)
    path.write_text(edited)
    before = messages(workspace.repo)
    chat = reviewer()
    report = review_pending(workspace, chat=chat)
    assert len(chat.calls) == len(ids) - 1
    skipped = next(o for o in report.outcomes if o.blueprint_id == ids[0])
    assert skipped.note is not None and "uncommitted edits twinforge did not make" in skipped.note
    assert path.read_text() == edited and f"blueprints/{ids[0]}.yaml" in changed_files(workspace)
    assert not any(m.startswith("recover") for m in messages(workspace.repo)[: len(ids)])
    session = ReviewQueue(workspace, "alice")
    session.load()  # opening the queue commits nothing either
    assert path.read_text() == edited and len(messages(workspace.repo)) == len(before) + len(ids) - 1
    with pytest.raises(ForeignChangeError, match="uncommitted changes that twinforge did not make"):
        session.note(ids[0], "looks fine")
    assert path.read_text() == edited
    session.close()


def test_a_user_edit_after_an_interrupted_write_is_left_alone(workspace: Workspace) -> None:
    ids = seeded(workspace)
    store = BlueprintStore(workspace)
    record = store.load(ids[0])
    record.move(Status.KEPT, action="triage", by="reviewer:x", reason="total 25")
    store.write(record)  # twinforge wrote, then died before the commit
    path = store.path(ids[0])
    path.write_text(path.read_text() + "# my note\n")  # then a person edited the file
    recovery = store.recover()
    assert recovery.committed == [] and recovery.foreign == [f"blueprints/{ids[0]}.yaml"]
    assert path.read_text().endswith("# my note\n")


def changed_files(workspace: Workspace) -> list[str]:
    return [d.a_path for d in workspace.repo.index.diff(None)] + workspace.repo.untracked_files


# hooks ----------------------------------------------------------------------------------------


def test_repository_hooks_run_on_every_commit(workspace: Workspace) -> None:
    install_hook(Path(workspace.repo.git_dir) / "hooks", "commit-msg", 'printf "\\nChecked-by: hook\\n" >> "$1"\n')
    assert workspace.hooks() == ["commit-msg"]
    ids = seeded(workspace)
    review_pending(workspace, chat=reviewer(), ids=ids[:1])
    generated, reviewed = messages(workspace.repo)[1::-1]
    assert generated.startswith("generate:") and reviewed.startswith(f"review: {ids[0]}")
    assert generated.rstrip().endswith("Checked-by: hook") and reviewed.rstrip().endswith("Checked-by: hook")
    assert list(workspace.repo.head.commit.stats.files) == [f"blueprints/{ids[0]}.yaml"]
    assert not workspace.repo.is_dirty(untracked_files=True)


def test_hooks_from_core_hooks_path_run_and_a_failing_one_refuses(workspace: Workspace, tmp_path: Path) -> None:
    hooks = tmp_path / "shared-hooks"
    install_hook(hooks, "pre-commit", "echo 'no commits on Fridays' >&2\nexit 1\n")
    workspace.repo.config_writer().set_value("core", "hooksPath", str(hooks)).release()
    gen = generator()
    with pytest.raises(WorkspaceError, match="no commits on Fridays") as info:
        generate(workspace, cell="S2-R3", chat=gen)
    assert "written but not committed" in str(info.value)
    (hooks / "pre-commit").unlink()
    recovery = BlueprintStore(workspace).recover()
    assert len(recovery.committed) == 10


def test_queue_action_refused_by_a_hook_is_not_made(workspace: Workspace) -> None:
    ids = seeded(workspace)
    review_pending(workspace, chat=reviewer())
    install_hook(Path(workspace.repo.git_dir) / "hooks", "pre-commit", "echo 'frozen' >&2\nexit 1\n")
    path = workspace.blueprints_dir / f"{ids[0]}.yaml"
    before = path.read_bytes()
    session = ReviewQueue(workspace, "alice")
    session.load()
    with pytest.raises(WorkspaceError, match="frozen"):
        session.approve(ids[0])
    assert path.read_bytes() == before and not workspace.repo.is_dirty(untracked_files=True)
    session.close()


# a workspace inside a larger repository ------------------------------------------------------------


def outer_repo(tmp_path: Path) -> git.Repo:
    repo = git.Repo.init(tmp_path / "project", initial_branch="main")
    (tmp_path / "project" / "app.py").write_text("print('hi')\n")
    repo.index.add(["app.py"])
    repo.index.commit("app")
    return repo


def test_init_inside_a_repository_warns_and_writes_nothing(tmp_path: Path) -> None:
    outer = outer_repo(tmp_path)
    with pytest.raises(WorkspaceError, match=f"lies inside the git repository {tmp_path / 'project'}"):
        Workspace.init(tmp_path / "project" / "bench")
    assert not (tmp_path / "project" / "bench").exists()
    cli = subprocess.run(
        [sys.executable, "-m", "twinforge", "init", "bench"],
        cwd=tmp_path / "project",
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "300"},
        timeout=120,
    )
    assert cli.returncode == 1 and "--nested" in cli.stderr and "--in-enclosing" in cli.stderr
    nested = Workspace.init(tmp_path / "project" / "nested", nesting="nested")
    assert nested.repository_top == tmp_path / "project" / "nested"
    assert outer.head.commit.message == "app"


def test_workspace_inside_a_larger_repository_commits_there(tmp_path: Path) -> None:
    outer = outer_repo(tmp_path)
    (tmp_path / "project" / "app.py").write_text("print('work in progress')\n")
    outer.index.add(["app.py"])  # the user's staged change must not ride along
    ws = Workspace.init(tmp_path / "project" / "bench", nesting="enclosing")
    assert ws.repository_top == tmp_path / "project"
    opened = Workspace.open(tmp_path / "project" / "bench" / "blueprints")
    assert opened.root == tmp_path / "project" / "bench"
    ids = seeded(opened)
    assert len(ids) == 10
    head = outer.head.commit
    assert head.message.startswith("generate:")
    assert all(p.startswith("bench/blueprints/") for p in head.stats.files)
    assert "app.py" in [d.a_path for d in outer.index.diff("HEAD")]  # still only staged
    review_pending(opened, chat=reviewer(), ids=ids[:1])
    assert all(p.startswith("bench/blueprints/") for p in outer.head.commit.stats.files)
    assert ".twinforge" not in " ".join(outer.untracked_files)


# invalid files are named by every command that skips them ----------------------------------------


def test_generate_and_review_name_the_invalid_files_they_skip(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws")
    bad = ws.blueprints_dir / "S1-R1-0badf11e.yaml"
    bad.write_text("schema_version: 1\nid: S1-R1-0badf11e\nstatus: kept\n")
    ws.commit("a hand-written file", ["blueprints/S1-R1-0badf11e.yaml"])
    gen_script, rev_script = tmp_path / "gen.yaml", tmp_path / "rev.yaml"
    gen_script.write_text(yaml.safe_dump(batch_for("S2-R3")))  # one reply per slot
    rev_script.write_text(yaml.safe_dump([review_dict([4] * 6)] * 10))
    env = {
        **os.environ,
        "COLUMNS": "300",
        "TWINFORGE_MODELS__GENERATOR__PROVIDER": "scripted",
        "TWINFORGE_MODELS__GENERATOR__SCRIPT": str(gen_script),
        "TWINFORGE_MODELS__REVIEWER__PROVIDER": "scripted",
        "TWINFORGE_MODELS__REVIEWER__SCRIPT": str(rev_script),
    }
    for args in (["generate", "--cell", "S2-R3"], ["review"]):
        out = subprocess.run(
            [sys.executable, "-m", "twinforge", *args],
            cwd=ws.root,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        assert "skipped invalid blueprint file" in out.stderr and "S1-R1-0badf11e.yaml" in out.stderr, out.stderr
