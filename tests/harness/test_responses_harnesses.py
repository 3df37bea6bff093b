"""Every harness that can speak Responses does so where the model block chooses it (OpenAI's own models).

Codex always speaks Responses; OpenCode (``@ai-sdk/openai``), Pi (``openai-responses``) and
Mini-SWE-agent in tool-call mode (its ``LitellmResponseModel``) switch with
``ModelSettings.harness_api`` (``openai_api``: ``auto`` is Responses for ``provider = "openai"``).
The CLIs' configurations are checked here; their real runs are in test_cli_harness_docker.py.
Mini-SWE-agent runs on the host against the proxy and a Responses-only scripted upstream.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.shell import FolderShell
from twinforge.core.settings import ModelSettings
from twinforge.harness import MiniSweAgent, ShellEnvironment, ShellEnvironmentConfig
from twinforge.harness.protocol import Limits, ModelEndpoint
from twinforge.harness.proxy import ModelProxy
from twinforge.harness.registry import CLI_HARNESSES
from twinforge.harness.scripted_upstream import Script, scripted_upstream

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


@pytest.mark.parametrize(
    ("provider", "choice", "api"),
    [
        ("openai", "auto", "responses"),
        ("openai-compatible", "auto", "chat"),
        ("openai", "chat", "chat"),
        ("openai-compatible", "responses", "responses"),
    ],
)
def test_the_model_block_chooses_the_api(provider: str, choice: str, api: str) -> None:
    settings = ModelSettings(provider=provider, base_url="http://127.0.0.1:1/v1", openai_api=choice)  # type: ignore[arg-type]
    endpoint = ModelEndpoint.for_model("http://proxy/v1", "tf-run-1", settings)
    assert settings.harness_api() == endpoint.api == api


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_opencode_and_pi_use_their_openai_providers_responses_api(api: str) -> None:
    endpoint = ModelEndpoint("http://127.0.0.1:1/v1", "tf-run-0123", "gpt-x", 0.0, 1024, api=api, reasoning=True)  # type: ignore[arg-type]
    opencode = CLI_HARNESSES["opencode"]()
    config = json.loads(opencode.launch(endpoint, "http://x:8000", "t", "/w", 30).files["/root/.opencode.json"])
    npm = config["provider"]["tf"]["npm"]
    assert npm == ("@ai-sdk/openai" if api == "responses" else "@ai-sdk/openai-compatible")
    pi = CLI_HARNESSES["pi"]()
    models = json.loads(pi.launch(endpoint, "http://x:8000", "t", "/w", 30).files["/root/.pi/agent/models.json"])
    provider = models["providers"]["tf"]
    assert provider["api"] == ("openai-responses" if api == "responses" else "openai-completions")
    assert provider["models"][0]["reasoning"] is True
    assert opencode.api_shape(endpoint) == pi.api_shape(endpoint) == api
    assert CLI_HARNESSES["codex"]().api_shape(endpoint) == "responses"  # always
    assert CLI_HARNESSES["claude-code"]().api_shape(endpoint) == "messages"


def test_mini_swe_agent_speaks_responses_and_keeps_each_replys_items(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TF_UPSTREAM_KEY", "sk-test")
    work = tmp_path / "work"
    work.mkdir()
    adapter = MiniSweAgent(action_mode="toolcall")
    proxy = ModelProxy().start()
    try:
        with scripted_upstream(Script(commands=["echo fixed > b.txt", SUBMIT]), key="sk-test") as (url, state):
            settings = ModelSettings(provider="openai", base_url=url, model="gpt-x", api_key_env="TF_UPSTREAM_KEY",
                                     api_shapes=["responses"])  # fmt: skip
            token = proxy.grant("mswea-responses", settings, cap=10, seconds=120, log=tmp_path / "proxy.jsonl")
            endpoint = ModelEndpoint.for_model(proxy.url, token, settings)
            assert adapter.api_shape(endpoint) == "responses"
            result = adapter.run_in(
                ShellEnvironment(FolderShell(work), ShellEnvironmentConfig(cwd=str(work))),
                "write b.txt",
                endpoint,
                tmp_path / "trajectory.json",
                Limits(model_calls=10, wall_s=120, command_timeout_s=10),
            )
            grant = proxy.release(token)
    finally:
        proxy.stop()
    assert result.exit_status == "Submitted" and (work / "b.txt").read_text() == "fixed\n"
    assert {s.path for s in state.seen} == {"/v1/responses"} and grant.shapes == {("responses", "responses")}
    second = state.seen[1].body["input"]
    assert any(i.get("type") == "function_call" for i in second)  # the first reply's output items went back
    assert any(i.get("type") == "function_call_output" for i in second)
    assert json.loads((tmp_path / "model.json").read_text())["shapes"] == [
        {"harness": "responses", "upstream": "responses"}
    ]
