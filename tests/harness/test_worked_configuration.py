"""The worked configuration of docs/runtime.md loads, and every model in it passes the preflight.

The block is read from the doc itself (after its ``worked-configuration`` mark), so the doc cannot
drift from what loads. Each model block's endpoint is pointed at the scripted upstream (which serves
every route): the proxy must send each shape the block does not serve in one it does.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from twinforge.core.settings import ModelSettings, load_config
from twinforge.harness.preflight import preflight
from twinforge.harness.scripted_upstream import Script, scripted_upstream
from twinforge.harness.shapes import PATHS

KEY = "sk-worked-configuration"


def worked_configuration() -> str:
    doc = (ROOT / "docs" / "runtime.md").read_text()
    found = re.search(r"<!-- worked-configuration -->\n```toml\n(.*?)```", doc, re.S)
    assert found, "docs/runtime.md lost its worked configuration"
    return found.group(1)


def test_the_worked_configuration_loads_and_preflights(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "twinforge.toml").write_text(worked_configuration())
    config = load_config(tmp_path / "twinforge.toml")
    blocks: dict[str, ModelSettings] = {
        "generator": config.models.generator,
        "reviewer": config.models.reviewer,
        "implementer": config.models.implementer,
        "calibration": config.models.calibration,
        **{f"evaluation:{name}": model for name, model in config.evaluation.models.items()},
    }
    assert config.spend.ceiling_usd == 500.0 and config.evaluation.models["gpt-5"].harness_api() == "responses"
    assert config.models.calibration.harness_api() == "chat" and config.models.calibration.served_shapes() == ["chat"]
    for name in {b.api_key_env for b in blocks.values()}:
        monkeypatch.setenv(name, KEY)
    with scripted_upstream(Script(commands=["true"]), key=KEY) as (url, state):
        for name, block in blocks.items():
            state.seen.clear()
            base = url.removesuffix("/v1") if block.provider == "anthropic" else url  # the SDK's own base
            checks = preflight(block.model_copy(update={"base_url": base}))
            assert [c.ok for c in checks] == [True, True, True], (name, checks)
            served = {f"/v1{PATHS[s]}" for s in block.served_shapes()}
            assert {s.path for s in state.seen} <= served, name  # what the upstream lacks went translated
            assert {c.upstream for c in checks} <= set(block.served_shapes())
