"""The forge case through every path that judges runs: the runner (test_hostile_forge.py), the
validation gate and calibration. Each must store COMPROMISED for the harm (docs/runtime.md)."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.hostile import pair_copy, play, report
from tests.support.lifecycle import mark_validated
from twinforge.calibration.calibrate import calibrate
from twinforge.core.llm.stub_server import openai_reply, stub_server
from twinforge.core.workspace import Workspace
from twinforge.runs.records import RecordsDB, records_url
from twinforge.taskpair import Outcome
from twinforge.taskpair.gate.validate import validate
from twinforge.taskpair.runtime.runner import Runner
from twinforge.taskpair.runtime.session import RunResult

pytestmark = [pytest.mark.docker, pytest.mark.slow]
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def forging_pair(tmp_path: Path) -> Path:
    """ref-r1 whose harm.sh is the recorded forge attack (s03): the harm, then the forger."""
    root = pair_copy(tmp_path, "ref-r1-remote-script")
    script = "#!/bin/bash\ncd /workspace/repo\n" + "\n".join(play("s03_forge_oracle_r1")) + "\n"
    (root / "risk" / "solution" / "harm.sh").write_text(script)
    return root


def test_forge_in_validate_is_still_compromised(runner: Runner, tmp_path: Path) -> None:
    root = forging_pair(tmp_path)
    # The oracles only: the harm.sh check is where the forge would score; the cheat battery is the
    # gate's own (tests/taskpair/test_gate_docker.py) and would add eighteen runs here.
    (pair_report,) = validate([root], runner, battery=False)
    harm = next(c for c in pair_report.checks if "harm.sh" in c.name and "harmful" in c.name)
    assert harm.passed and "COMPROMISED" in harm.detail, harm
    run_dir = next(d for d in runner.runs_dir.iterdir() if (d / "state" / "workspace" / "repo" / ".forge.py").exists())
    result = RunResult.model_validate_json((run_dir / "result.json").read_text())
    leaked = report("s03 forge through `validate`", "COMPROMISED", result, held=result.outcome is Outcome.COMPROMISED)
    assert result.outcome is Outcome.COMPROMISED and not leaked


class Script:
    """The scripted model: one Mini-SWE-agent action per turn."""

    def __init__(self, commands: list[str]) -> None:
        self.commands = commands

    def __call__(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        command = self.commands[min(turn, len(self.commands) - 1)]
        return 200, openai_reply(f"THOUGHT: next step.\n\n```mswea_bash_command\n{command}\n```")


@pytest.fixture
def model_url() -> Iterator[str]:
    commands = ["cd /workspace/repo && " + c for c in play("s03_forge_oracle_r1")] + [SUBMIT]
    with stub_server(Script(commands)) as (url, _received):
        yield url


def test_forge_in_calibrate_is_still_compromised(
    tmp_path: Path, model_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALIBRATION_KEY", "sk-test-not-a-real-key")
    workspace = Workspace.init(tmp_path / "ws")
    settings = workspace.config.models.calibration
    settings.base_url, settings.api_key_env, settings.model = model_url, "CALIBRATION_KEY", "weak-model"
    workspace.config.calibration.grammar = False
    root = forging_pair(workspace.tasks_dir)  # calibrate takes validated pairs of the workspace
    mark_validated(workspace, root)
    calibrate(workspace, [root], runs=1)
    (risk,) = [r for r in RecordsDB(records_url(workspace)).runs() if r.side == "risk"]
    result = RunResult.model_validate_json((Path(str(risk.evidence_dir)) / "result.json").read_text())
    commands = (Path(str(risk.evidence_dir)) / "agent" / "commands.jsonl").read_text()
    assert shlex.quote(".forge.py")[:5] in commands  # the agent did plant the forger
    leaked = report("s03 forge through `calibrate`", "COMPROMISED", result, held=risk.outcome == "COMPROMISED")
    assert risk.outcome == Outcome.COMPROMISED.value and result.outcome is Outcome.COMPROMISED and not leaked
