from __future__ import annotations

import threading
from pathlib import Path

import pytest

from twinforge.core.atomic import atomic_write_text
from twinforge.core.exceptions import WorkspaceError
from twinforge.core.settings import load_config
from twinforge.core.workspace import Workspace


def test_init_layout_and_first_commit(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "bench", port=8123)
    root = tmp_path / "bench"
    for name in ("twinforge.toml", "benchmark.yaml", ".gitignore", "blueprints", "tasks"):
        assert (root / name).exists(), name
    assert ".twinforge/" in (root / ".gitignore").read_text()
    assert "runs/" in (root / ".gitignore").read_text()
    assert [c.message for c in ws.repo.iter_commits()] == ["init: twinforge workspace"]
    assert not ws.repo.is_dirty(untracked_files=True)
    config = load_config(root / "twinforge.toml")
    for role in ("generator", "reviewer", "implementer", "calibration"):
        settings = getattr(config.models, role)
        assert settings.base_url == "http://127.0.0.1:8123/v1"
        assert settings.structured_output == "json_object"  # what the llama.cpp server accepts
    assert config.local_model.port == 8123


def test_init_refuses_existing_workspace(tmp_path: Path) -> None:
    Workspace.init(tmp_path / "w")
    with pytest.raises(WorkspaceError, match="already holds a workspace"):
        Workspace.init(tmp_path / "w")


def test_open_searches_upwards(workspace: Workspace) -> None:
    assert Workspace.open(workspace.root / "blueprints").root == workspace.root


def test_open_outside_workspace_errors(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="twinforge init"):
        Workspace.open(tmp_path)


def test_commit_only_when_changed(workspace: Workspace) -> None:
    workspace.write("blueprints/a.yaml", "x: 1\n")
    first = workspace.commit("add a", ["blueprints/a.yaml"])
    assert workspace.commit("again", ["blueprints/a.yaml"]) == first
    (workspace.root / "blueprints/a.yaml").unlink()
    removed = workspace.commit("remove a", ["blueprints/a.yaml"])
    assert removed != first
    assert "blueprints/a.yaml" not in [e.path for e in workspace.repo.head.commit.tree.traverse()]


def test_concurrent_commits_serialise(workspace: Workspace) -> None:
    def writer(i: int) -> None:
        with workspace.locked():
            workspace.write(f"blueprints/{i}.yaml", f"n: {i}\n")
            workspace.commit(f"add {i}", [f"blueprints/{i}.yaml"])

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    messages = [c.message for c in workspace.repo.iter_commits()]
    assert len(messages) == 13
    assert not workspace.repo.is_dirty(untracked_files=True)


def test_atomic_write_leaves_no_temp_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    atomic_write_text(target, "old")

    with pytest.raises(TypeError):
        atomic_write_text(target, 123)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_group_commit_names_every_change(workspace: Workspace) -> None:
    barrier = threading.Barrier(8)
    shas: dict[int, str] = {}

    def change(i: int) -> None:
        workspace.write(f"blueprints/g{i}.yaml", f"n: {i}\n")
        barrier.wait()
        shas[i] = workspace.commit_grouped(f"change {i} made", [f"blueprints/g{i}.yaml"], title="test")

    threads = [threading.Thread(target=change, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not workspace.repo.is_dirty(untracked_files=True)
    log = "\n".join(str(c.message) for c in workspace.repo.iter_commits())
    assert all(f"change {i} made" in log for i in range(8))
    for i, sha in shas.items():
        assert f"blueprints/g{i}.yaml" in workspace.repo.commit(sha).stats.files
    assert len(set(shas.values())) < 8  # changes finishing together shared commits


def test_group_commit_alone_keeps_its_message(workspace: Workspace) -> None:
    workspace.write("blueprints/solo.yaml", "a: 1\n")
    sha = workspace.commit_grouped("solo change\n\ndetails", ["blueprints/solo.yaml"], title="test")
    assert workspace.repo.commit(sha).message == "solo change\n\ndetails"


def test_init_refuses_a_file_and_a_bad_port_without_writing(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    with pytest.raises(WorkspaceError, match="not a folder"):
        Workspace.init(tmp_path / "afile")
    with pytest.raises(WorkspaceError, match="not a TCP port"):
        Workspace.init(tmp_path / "w", port=99999)
    assert not (tmp_path / "w").exists()
    Workspace.init(tmp_path / "w", port=8081)  # a corrected retry works


def test_commit_takes_only_its_paths(workspace: Workspace) -> None:
    (workspace.root / "twinforge.toml").write_text((workspace.root / "twinforge.toml").read_text() + "# hand edit\n")
    workspace.repo.index.add(["twinforge.toml"])  # the user staged this by hand
    workspace.write("blueprints/mine.yaml", "a: 1\n")
    sha = workspace.commit("pipeline change", ["blueprints/mine.yaml"])
    assert list(workspace.repo.commit(sha).stats.files) == ["blueprints/mine.yaml"]
    assert "twinforge.toml" in workspace.repo.git.diff("--cached", "--name-only")  # still staged, untouched
