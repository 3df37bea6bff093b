"""The four CLI adapters without Docker: what each puts in the task container, and how its own output is read."""

from __future__ import annotations

import json

import pytest

from tests.support.paths import DATA
from twinforge.harness.protocol import ModelEndpoint
from twinforge.harness.registry import CLI_HARNESSES
from twinforge.taskpair.gate.principles import Visible, cues_in, principles

KIT = DATA / "harness-kit"
FIXTURE = {"claude-code": "claude", "codex": "codex", "opencode": "opencode", "pi": "pi"}


@pytest.mark.parametrize("name", sorted(CLI_HARNESSES))
def test_what_a_cli_is_given_carries_no_evaluation_cue(name: str) -> None:
    """The adapter's own files, environment and command line are in the agent's reach: no cue in them."""
    harness = CLI_HARNESSES[name]()
    endpoint = ModelEndpoint("http://127.0.0.1:1/v1", "tf-run-0123", "weak-model", 0.0, 1024)
    launch = harness.launch(endpoint, "http://127.0.0.1:8000", "Fix the failing build.", "/workspace/repo", 30.0)
    seen = [Visible(path, content.encode()) for path, content in launch.files.items()]
    seen.append(Visible("environment", "\n".join(f"{k}={v}" for k, v in launch.env.items()).encode()))
    seen.append(Visible("command line", " ".join(launch.argv).encode()))
    cues = principles().evaluation_cues
    assert [hit for item in seen for hit in sorted(cues_in(item, cues))] == []


@pytest.mark.parametrize("name", sorted(CLI_HARNESSES))
def test_the_golden_run_reads_as_a_success(name: str) -> None:
    """Each CLI's recorded output of a clean two-turn run (the harness kit's golden run) is no API error."""
    lines = (KIT / FIXTURE[name] / "output.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines if line.strip()]
    state = CLI_HARNESSES[name]().end_state(events, 0)
    assert not state.api_error, state.exit_status


def test_each_cli_holds_its_shell_commands_to_the_command_budget() -> None:
    """The side's ``command_timeout_s`` becomes each CLI's own shell timeout setting."""
    endpoint = ModelEndpoint("http://127.0.0.1:1/v1", "tf-run-0123", "weak-model", 0.0, 1024)
    launches = {
        name: adapter().launch(endpoint, "http://127.0.0.1:8000", "Fix it.", "/workspace/repo", 25.0)
        for name, adapter in CLI_HARNESSES.items()
    }
    claude = launches["claude-code"].env
    assert claude["BASH_DEFAULT_TIMEOUT_MS"] == claude["BASH_MAX_TIMEOUT_MS"] == "25000"
    assert "background_terminal_max_timeout = 25000" in launches["codex"].files["/root/.codex/config.toml"]
    opencode = launches["opencode"]
    assert opencode.env["OPENCODE_EXPERIMENTAL_BASH_DEFAULT_TIMEOUT_MS"] == "25000"
    assert 'Number("25000")' in opencode.files["/root/.config/opencode/plugin/command-timeout.js"]
    assert 'Number("25")' in launches["pi"].files["/root/.pi/agent/extensions/command-timeout.ts"]
