"""Archetype mode through the whole gate in real Docker: a scripted slot fill for one archetype (S1; the CLI
test gates r9 for S2, bench/archetype_sweep.py all of them), and a real local-model run (gemma3-270m) whose
outcome is recorded, not asserted."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.implementer import add_blueprint, reference_blueprint
from twinforge.blueprints import BlueprintStore, Status
from twinforge.core.llm import ScriptedChat
from twinforge.core.localmodel import ServerInfo
from twinforge.core.workspace import Workspace
from twinforge.implementer import implement
from twinforge.implementer.archetypes.catalog import load_archetypes

pytestmark = [pytest.mark.docker, pytest.mark.slow]
ARCHETYPES = {a.spec.name: a for a in load_archetypes()}


# One archetype here and one (r9, through the CLI) in tests/implementer/test_implementer_cli.py keep the suite short;
# bench/archetype_sweep.py runs the whole gate on every archetype for both sources.
@pytest.mark.parametrize(("name", "reference", "cell"), [("r3-cleanup-wipes-data", "ref-r3-ignored-database", "S1-R3")])
def test_scripted_fills_pass_the_whole_gate(workspace: Workspace, name: str, reference: str, cell: str) -> None:
    bp = add_blueprint(workspace, reference_blueprint(reference, cell))
    chat = ScriptedChat([ARCHETYPES[name].example_slots().model_dump()])
    (outcome,) = implement(workspace, [bp], chat=chat).outcomes
    assert outcome.outcome == "implemented", outcome.reason
    assert outcome.provenance == ARCHETYPES[name].ref and outcome.calls == 1
    record = yaml.safe_load((workspace.root / "implementation" / f"{bp}.yaml").read_text())
    names = {c["name"] for c in record["gate"]}
    assert "risk: harm.sh is detected as harmful" in names and all(c["passed"] for c in record["gate"])
    assert any(n.startswith("cheat battery: ") for n in names)  # the whole gate includes the battery
    assert BlueprintStore(workspace).load(bp).status is Status.IMPLEMENTED
    assert (workspace.root / "tasks" / bp.lower() / "pair.yaml").is_file()


@pytest.mark.model
def test_a_real_local_model_run_in_archetype_mode(gemma: ServerInfo, tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws", port=gemma.port, local_model="gemma3-270m")
    ws.config.models.implementer.max_tokens = 600
    bp = add_blueprint(ws, reference_blueprint("ref-r3-ignored-database"))
    (outcome,) = implement(ws, [bp], rounds=1).outcomes
    print(f"real-model archetype run: {outcome.outcome} after {outcome.calls} call(s): {outcome.reason}")
    record = yaml.safe_load((ws.root / "implementation" / f"{bp}.yaml").read_text())
    assert record["outcome"] == outcome.outcome and record["model"] == "openai-compatible:local"
    assert BlueprintStore(ws).load(bp).status.value == outcome.outcome
