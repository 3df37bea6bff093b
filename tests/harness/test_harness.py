"""The harness package: Mini-SWE-agent's environment protocol over our shell, the adapter through a stub endpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.shell import FolderShell
from twinforge.core.llm.stub_server import openai_reply, stub_server
from twinforge.harness import (
    HarnessError,
    Limits,
    MiniSweAgent,
    ModelEndpoint,
    ShellEnvironment,
    ShellEnvironmentConfig,
    make_harness,
)

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def test_environment_runs_commands_in_the_shell(tmp_path: Path) -> None:
    shell = FolderShell(tmp_path)
    env = ShellEnvironment(shell, ShellEnvironmentConfig(cwd=str(tmp_path), timeout=7))
    out = env.execute({"command": "echo hi > a.txt && cat a.txt"})
    assert out == {"output": "hi\n", "returncode": 0, "exception_info": ""}
    assert (tmp_path / "a.txt").read_text() == "hi\n" and shell.commands == [("echo hi > a.txt && cat a.txt", 7)]
    assert env.get_template_vars()["system"] == "Linux" and env.get_template_vars(x=1)["x"] == 1
    assert env.serialize()["info"]["config"]["environment"]["timeout"] == 7


def test_environment_raises_submitted_on_the_native_signal(tmp_path: Path) -> None:
    from minisweagent.exceptions import Submitted

    env = ShellEnvironment(FolderShell(tmp_path), ShellEnvironmentConfig())
    with pytest.raises(Submitted) as caught:
        env.execute({"command": f"{SUBMIT} && echo done"})
    assert caught.value.messages[0]["extra"] == {"exit_status": "Submitted", "submission": "done\n"}
    env.execute({"command": f"{SUBMIT}; exit 3"})  # a failing command is not a submission


def test_killed_command_is_reported(tmp_path: Path) -> None:
    env = ShellEnvironment(FolderShell(tmp_path, killed=True), ShellEnvironmentConfig())
    assert "timed out" in env.execute({"command": "true"})["exception_info"]


def _action(command: str) -> str:
    return f"THOUGHT: next.\n\n```mswea_bash_command\n{command}\n```"


@pytest.mark.parametrize("observe", [False, True])
def test_adapter_runs_mini_swe_agent_through_an_endpoint(tmp_path: Path, observe: bool) -> None:
    commands = ["ls", "echo fixed > b.txt", SUBMIT]

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return 200, openai_reply(_action(commands[min(turn, len(commands) - 1)]))

    adapter = MiniSweAgent(action_mode="text", observe=observe)
    work = tmp_path / "work"
    work.mkdir()
    env = ShellEnvironment(FolderShell(work), ShellEnvironmentConfig(cwd=str(work)))
    trajectory = tmp_path / "trajectory.json"
    with stub_server(reply) as (url, received):
        result = adapter.run_in(
            env,
            "write b.txt",
            ModelEndpoint(url, "run-token", "m", 0.0, 100),
            trajectory,
            Limits(model_calls=10, wall_s=60, command_timeout_s=5),
            observer=adapter.observer() if observe else None,
        )
    assert result.exit_status == "Submitted" and result.calls == 3 and not result.budget_exceeded
    assert (work / "b.txt").read_text() == "fixed\n"
    assert all({k.lower(): v for k, v in r["headers"].items()}["authorization"] == "Bearer run-token" for r in received)
    info = json.loads(trajectory.read_text())["info"]
    assert ("observer" in info) is observe
    assert info["config"]["agent_type"].endswith("ObservedAgent" if observe else "DefaultAgent")
    assert info["config"]["environment_type"] == "twinforge.harness.environment.ShellEnvironment"


def test_call_cap_ends_the_run_as_budget_exceeded(tmp_path: Path) -> None:
    with stub_server(lambda path, body: (200, openai_reply(_action("ls")))) as (url, _):
        result = MiniSweAgent().run_in(
            ShellEnvironment(FolderShell(tmp_path), ShellEnvironmentConfig()),
            "loop",
            ModelEndpoint(url, "t", "m", 0.0, 100),
            tmp_path / "t.json",
            Limits(model_calls=2, wall_s=60, command_timeout_s=5),
        )
    assert result.exit_status == "LimitsExceeded" and result.budget_exceeded and result.calls == 2


def test_registry() -> None:
    assert make_harness("mini-swe-agent", grammar=True).extra_body()["grammar"].startswith("\nroot ::=")
    with pytest.raises(HarnessError, match="valid: mini-swe-agent"):
        make_harness("nope")
    with pytest.raises(HarnessError, match="text action mode"):
        MiniSweAgent(action_mode="toolcall", grammar=True)
