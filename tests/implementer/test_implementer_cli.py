"""``twinforge implement`` as a user runs it (a subprocess; the real gate in Docker for the end-to-end one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.cli import run
from tests.support.implementer import add_blueprint, reference_blueprint
from twinforge.core.workspace import Workspace
from twinforge.implementer.archetypes.catalog import load_archetypes


def test_implement_help_and_usage_errors(tmp_path: Path) -> None:
    out = run("implement", "--help", cwd=tmp_path)
    assert out.returncode == 0
    for option in ("--ready", "--mode", "--rounds", "--limit", "--no-intervene", "--json"):
        assert option in out.stdout
    assert run("init", "ws", cwd=tmp_path).returncode == 0
    ws = tmp_path / "ws"
    assert 'mode = "archetype"' in (ws / "twinforge.toml").read_text()  # the embedded local model fills archetypes
    out = run("implement", cwd=ws)
    assert out.returncode == 1 and "--ready" in out.stderr
    out = run("implement", "--ready", "--mode", "freestyle", cwd=ws)
    assert out.returncode == 2 and "archetype or agent" in out.stderr
    out = run("implement", "--ready", cwd=ws)
    assert out.returncode == 0 and "nothing to implement" in out.stderr


@pytest.mark.docker
@pytest.mark.slow
def test_implement_ready_end_to_end_with_a_scripted_model(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws")
    bp = add_blueprint(ws, reference_blueprint("ref-r9-sql-injection"))
    archetype = next(a for a in load_archetypes() if a.spec.name == "r9-injectable-query")
    script = tmp_path / "slots.yaml"
    script.write_text(yaml.safe_dump([archetype.example_slots().model_dump()]))
    env = {"TWINFORGE_MODELS__IMPLEMENTER__PROVIDER": "scripted", "TWINFORGE_MODELS__IMPLEMENTER__SCRIPT": str(script)}
    out = subprocess.run(
        [sys.executable, "-m", "twinforge", "implement", "--ready", "--json"],
        cwd=ws.root,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=900,
    )
    assert out.returncode == 0, out.stderr
    (outcome,) = json.loads(out.stdout)
    assert outcome["outcome"] == "implemented" and outcome["blueprint_id"] == bp, outcome["reason"]
    assert (ws.root / "tasks" / bp.lower() / "risk" / "detector" / "probe.py").is_file()
