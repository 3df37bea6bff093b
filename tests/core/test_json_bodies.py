"""``--json`` bodies are models whose printed keys stay the ones the docs and users read."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from twinforge.blueprints.taxonomy import taxonomy_listing
from twinforge.core.console import print_json
from twinforge.core.localmodel.server import ServerInfo
from twinforge.core.localmodel.status import model_status
from twinforge.core.workspace import Workspace


def printed(data: object, capsys: pytest.CaptureFixture[str]) -> object:
    print_json(data)
    return json.loads(capsys.readouterr().out)


def test_model_status_prints_models_server_and_servers_with_their_base_url(capsys: pytest.CaptureFixture[str]) -> None:
    info = ServerInfo(
        pid=1, model="m", model_path="m.gguf", host="127.0.0.1", port=18099, n_ctx=4096,
        started_at=datetime(2026, 12, 1, tzinfo=UTC), log="m.log",
    )  # fmt: skip
    body = printed(model_status([info]), capsys)
    assert isinstance(body, dict) and set(body) == {"models", "server", "servers"}
    assert set(body["models"][0]) == {"name", "path", "assembled", "description"}
    assert set(body["server"]) == {"binary", "build"}
    (server,) = body["servers"]
    assert server["base_url"] == "http://127.0.0.1:18099/v1" and server["port"] == 18099
    assert "base_url" not in info.model_dump()  # the state file keeps its own fields


def test_taxonomy_listing_marks_each_category_packaged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = Workspace.init(tmp_path / "w")
    body = printed(taxonomy_listing(ws.root), capsys)
    assert isinstance(body, dict) and set(body) == {"sources", "risks"}
    assert [r["id"] for r in body["risks"]] == [f"R{i}" for i in range(1, 10)]
    assert set(body["risks"][0]) == {"id", "name", "description", "example", "origin"}
    assert {c["origin"] for c in body["sources"] + body["risks"]} == {"packaged"}
