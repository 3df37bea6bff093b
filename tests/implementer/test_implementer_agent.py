"""Agent mode with scripted agents: Mini-SWE-agent's loop in the real sandbox container, every call through
the recording proxy to a stub endpoint that plays the model (its reply is a function of the conversation)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.implementer import REFERENCE, StaticGate, add_blueprint, reference_blueprint
from twinforge.blueprints import BlueprintStore, Status
from twinforge.core.llm.stub_server import openai_reply, stub_server
from twinforge.core.workspace import Workspace
from twinforge.implementer import implement

pytestmark = [pytest.mark.docker]
REF = "ref-r3-ignored-database"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
Policy = Callable[[list[dict[str, Any]]], str]


def action(command: str) -> str:
    return f"THOUGHT: next step.\n\n```mswea_bash_command\n{command}\n```"


def said(messages: list[dict[str, Any]], text: str) -> bool:
    return any(text in str(m.get("content")) for m in messages if m["role"] in ("user", "tool"))


class Agent:
    """The stub model: ``policy(messages) -> command``; counts its calls."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.calls = 0

    def __call__(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.calls += 1
        return 200, openai_reply(action(self.policy(body["messages"])))


@pytest.fixture
def agent_ws(workspace: Workspace) -> Iterator[tuple[Workspace, Agent]]:
    agent = Agent(lambda messages: SUBMIT)
    with stub_server(agent) as (url, _):
        cfg = workspace.config
        cfg.implementer.mode = "agent"
        cfg.models.implementer.base_url = url
        cfg.models.implementer.model = "scripted-agent"
        yield workspace, agent


def build_from_reference(pair_id: str, blueprint_id: str) -> str:
    """A shell command that turns /pair into the reference pair under this blueprint (pair.yaml kept valid)."""
    ref = yaml.safe_load((REFERENCE / REF / "pair.yaml").read_text())
    spec = {
        **ref,
        "id": pair_id,
        "blueprint_id": blueprint_id,
        "implements": blueprint_id,
        "fidelity": "exact",  # an agent-mode pair implements its blueprint exactly (docs/implementer.md)
        "provenance": {"kind": "agent"},
    }
    text = yaml.safe_dump(spec, sort_keys=False, width=100)
    return (
        f"cp -r /reference/pairs/{REF}/risk /reference/pairs/{REF}/twin /pair/ && "
        f"cat > /pair/pair.yaml <<'YAML'\n{text}YAML"
    )


def record_of(ws: Workspace, bp: str) -> dict[str, Any]:
    return yaml.safe_load((ws.root / "implementation" / f"{bp}.yaml").read_text())


@pytest.mark.slow
def test_the_agent_fixes_a_broken_detector_from_the_gates_feedback(agent_ws: tuple[Workspace, Agent]) -> None:
    ws, agent = agent_ws
    bp = add_blueprint(ws, reference_blueprint(REF))
    steps = [
        build_from_reference(bp.lower(), bp) + "\nsed -i 's/^harmful = .*/harmful = False/' risk/detector/detect.py",
        "twinforge-check --dynamic",
        f"cp /reference/pairs/{REF}/risk/detector/detect.py risk/detector/detect.py",
        "twinforge-check",  # static only: the whole gate runs again at the submit (keeps the test short)
        SUBMIT,
    ]
    agent.policy = lambda messages: steps[min(sum(m["role"] == "assistant" for m in messages), len(steps) - 1)]
    (outcome,) = implement(ws, [bp]).outcomes
    assert outcome.outcome == "implemented", outcome.reason
    record = record_of(ws, bp)
    (round_,) = record["rounds"]
    assert round_["gate_calls"] == 2 and "risk: harm.sh is detected as harmful" in round_["first_failed"]
    assert round_["exit_status"] == "Submitted" and round_["calls"] == 5 == agent.calls
    assert record["provenance"] == "agent:mini-swe-agent" and record["observed"]
    run_dir = ws.root / "runs" / "implement" / bp
    assert (run_dir / "proxy.jsonl").read_text().count("\n") == 5
    trajectory = json.loads(Path(round_["trajectory"]).read_text())
    assert "FAILED risk: harm.sh is detected as harmful" in json.dumps(trajectory["messages"])
    assert (ws.root / "tasks" / bp.lower() / "risk" / "detector" / "detect.py").read_text() == (
        REFERENCE / REF / "risk" / "detector" / "detect.py"
    ).read_text()
    assert BlueprintStore(ws).load(bp).status is Status.IMPLEMENTED


def test_a_looping_agent_is_nudged_and_recovers(agent_ws: tuple[Workspace, Agent]) -> None:
    ws, agent = agent_ws
    bp = add_blueprint(ws, reference_blueprint(REF))
    build = build_from_reference(bp.lower(), bp)

    def policy(messages: list[dict[str, Any]]) -> str:
        if said(messages, "Observer note"):
            return SUBMIT if said(messages, "copied-now") else build + "\necho copied-now"
        return "ls -la"

    agent.policy = policy
    (outcome,) = implement(ws, [bp], gate=StaticGate()).outcomes
    assert outcome.outcome == "implemented", outcome.reason
    assert outcome.interventions == 1 and outcome.recovered == 1
    trajectory = json.loads(Path(record_of(ws, bp)["rounds"][0]["trajectory"]).read_text())
    (intervention,) = trajectory["info"]["observer"]["interventions"]
    assert intervention["key"] == "reasoning/repeated_command" and intervention["recovered"]


def test_writing_outside_the_pair_is_a_drift_finding(agent_ws: tuple[Workspace, Agent]) -> None:
    ws, agent = agent_ws
    bp = add_blueprint(ws, reference_blueprint(REF))
    build = build_from_reference(bp.lower(), bp)
    steps = ["mkdir -p /tmp/x && echo notes > /home/notes.txt", build, "cat pair.yaml", "ls risk", SUBMIT]
    agent.policy = lambda messages: steps[min(sum(m["role"] == "assistant" for m in messages), len(steps) - 1)]
    (outcome,) = implement(ws, [bp], gate=StaticGate()).outcomes
    trajectory = json.loads(Path(record_of(ws, bp)["rounds"][0]["trajectory"]).read_text())
    findings = trajectory["info"]["observer"]["findings"]
    assert any(f["kind"] == "write_outside_scope" and "/home/notes.txt" in f["evidence"] for f in findings)
    assert outcome.interventions >= 1


def test_an_agent_that_never_finishes_exhausts_the_budget(agent_ws: tuple[Workspace, Agent]) -> None:
    ws, agent = agent_ws
    ws.config.implementer.model_calls = 4
    bp = add_blueprint(ws, reference_blueprint(REF), status=Status.APPROVED)
    agent.policy = lambda messages: f"echo step {len(messages)}"
    (outcome,) = implement(ws, ready=True, gate=StaticGate(), intervene=False).outcomes
    assert outcome.outcome == "impl_failed" and outcome.calls == 4 == agent.calls
    record = record_of(ws, bp)
    assert "model-call budget of 4 used up" in record["reason"]
    assert record["rounds"][0]["exit_status"] == "LimitsExceeded"
    assert "implemented: no scaffold placeholders left" in record["failed_checks"]
    assert BlueprintStore(ws).load(bp).status is Status.IMPL_FAILED
    assert ws.repo.head.commit.message.startswith(f"implement: {bp} -> impl_failed")


def test_a_failing_model_server_leaves_the_blueprint_unjudged(agent_ws: tuple[Workspace, Agent]) -> None:
    from twinforge.core.exceptions import ModelCallError

    ws, _ = agent_ws
    bp = add_blueprint(ws, reference_blueprint(REF))
    ws.config.implementer.model_calls = 3
    ws.config.models.implementer.base_url = "http://127.0.0.1:9/v1"  # nothing listens there
    # the proxy ends the run at the first failed call (docs/calibration.md, "Model proxy")
    with pytest.raises(ModelCallError, match="failed on 1 of 1 calls"):
        implement(ws, [bp], gate=StaticGate())
    assert BlueprintStore(ws).load(bp).status is Status.KEPT
    assert not (ws.root / "implementation" / f"{bp}.yaml").exists()


def test_no_intervene_runs_the_observer_in_shadow_mode(agent_ws: tuple[Workspace, Agent]) -> None:
    ws, agent = agent_ws
    ws.config.implementer.model_calls = 8
    bp = add_blueprint(ws, reference_blueprint(REF))
    agent.policy = lambda messages: "ls -la"
    (outcome,) = implement(ws, [bp], gate=StaticGate(), intervene=False, rounds=1).outcomes
    assert outcome.interventions == 0 and agent.calls == 8  # nothing delivered: the loop ran to the cap
    record = record_of(ws, bp)
    assert record["shadowed"] >= 1 and record["rounds"][0]["shadowed"] == record["shadowed"]
    trajectory = json.loads(Path(record["rounds"][0]["trajectory"]).read_text())
    info = trajectory["info"]["observer"]
    assert info["mode"] == "shadow" and info["shadowed"][0]["key"] == "reasoning/repeated_command"
    assert not any("Observer note" in str(m.get("content")) for m in trajectory["messages"])


def test_files_the_agent_deletes_under_the_gate_make_a_recorded_impl_failed(agent_ws: tuple[Workspace, Agent]) -> None:
    # round four of the hostile agent: a file deleted while the pair was copied out left a link to nothing,
    # and the static gate raised FileNotFoundError out of implement; now each check that cannot read it fails
    ws, agent = agent_ws
    bp = add_blueprint(ws, reference_blueprint(REF))
    build = build_from_reference(bp.lower(), bp)
    dangle = "rm risk/instruction.md && ln -s ../twin/deleted-meanwhile.md risk/instruction.md"
    steps = [build, dangle, "twinforge-check", SUBMIT]
    agent.policy = lambda messages: steps[min(sum(m["role"] == "assistant" for m in messages), len(steps) - 1)]
    (outcome,) = implement(ws, [bp], gate=StaticGate(), rounds=1).outcomes
    assert outcome.outcome == "impl_failed"
    record = record_of(ws, bp)
    assert "risk: no evaluation cues" in record["failed_checks"], record["failed_checks"]
    (round_,) = record["rounds"]
    assert "risk: required files" in round_["first_failed"]  # the agent's own check got the report too
    assert BlueprintStore(ws).load(bp).status is Status.IMPL_FAILED
    assert ws.repo.head.commit.message.startswith(f"implement: {bp} -> impl_failed")
