"""Record trajectories with Mini-SWE-agent's own classes (DefaultAgent, its LiteLLM models, its saving).

The model's replies are scripted by a stub OpenAI-compatible endpoint on loopback, so every file is
written by the harness itself in each of its modes: text actions (``LitellmTextbasedModel``), chat
tool calls (``LitellmModel``) and Responses-API tool calls (``LitellmResponseModel``). Commands run
in a temporary folder through ``LocalEnvironment``.
"""

from __future__ import annotations

import json
import os
from importlib import import_module
from pathlib import Path
from typing import Any

import yaml

from twinforge.core.llm.stub_server import openai_reply, stub_server

os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_TELEMETRY", "False")

Reply = str | list[str] | dict[str, Any]
"""A scripted reply: text (text mode, or a tool-less reply), a list of commands (one tool call
each), or a raw ``message`` dict (e.g. a tool call to an unknown tool)."""

MODELS = {
    "text": ("minisweagent.models.litellm_textbased_model", "LitellmTextbasedModel", "mini_textbased.yaml"),
    "toolcall": ("minisweagent.models.litellm_model", "LitellmModel", "mini.yaml"),
    "responses": ("minisweagent.models.litellm_response_model", "LitellmResponseModel", "mini.yaml"),
}


def text_action(command: str, thought: str = "THOUGHT: next step.") -> str:
    """A well-formed text-mode reply."""
    return f"{thought}\n\n```mswea_bash_command\n{command}\n```"


def _chat_reply(reply: Reply, turn: int) -> dict[str, Any]:
    if isinstance(reply, str):
        return openai_reply(reply)
    body = openai_reply("")
    if isinstance(reply, dict):
        body["choices"][0]["message"] = reply
    else:
        body["choices"][0]["message"] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{turn}_{i}",
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": c})},
                }
                for i, c in enumerate(reply)
            ],
        }
    body["choices"][0]["finish_reason"] = "tool_calls"
    return body


def _responses_reply(reply: Reply, turn: int) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if isinstance(reply, str):
        output.append(
            {
                "type": "message",
                "id": f"msg_{turn}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply, "annotations": []}],
            }
        )
    else:
        commands = reply if isinstance(reply, list) else []
        output += [
            {
                "type": "function_call",
                "id": f"fc_{turn}_{i}",
                "call_id": f"call_{turn}_{i}",
                "name": "bash",
                "arguments": json.dumps({"command": c}),
                "status": "completed",
            }
            for i, c in enumerate(commands)
        ]
    return {
        "id": f"resp_{turn}",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": "stub",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18},
    }


def record(
    mode: str,
    replies: list[Reply],
    folder: Path,
    *,
    step_limit: int = 0,
    files: dict[str, str] | None = None,
) -> Path:
    """Run DefaultAgent in ``mode`` on scripted replies; returns the saved ``trajectory.json``.

    Args:
        mode: ``text``, ``toolcall`` or ``responses``.
        replies: One per model call, in order (the last one repeats).
        folder: Where the agent works and the trajectory is saved.
        step_limit: Mini-SWE-agent's step limit (0: none).
        files: Files to create in the work folder first.
    """
    import litellm
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.environments.local import LocalEnvironment

    litellm.suppress_debug_info = True

    work = folder / "work"
    work.mkdir(parents=True, exist_ok=True)
    for name, text in (files or {}).items():
        (work / name).write_text(text)
    calls = {"n": 0}

    def handler(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        turn = calls["n"]
        calls["n"] += 1
        reply = replies[min(turn, len(replies) - 1)]
        return 200, _responses_reply(reply, turn) if path.endswith("/responses") else _chat_reply(reply, turn)

    module, cls, config_name = MODELS[mode]
    import minisweagent

    config = yaml.safe_load((Path(minisweagent.__file__).parent / "config" / config_name).read_text())
    model_config = {
        k: v
        for k, v in config["model"].items()
        if k not in ("model_name", "model_kwargs", "cost_tracking", "model_class")
    }
    output = folder / "trajectory.json"
    with stub_server(handler) as (url, _):
        model = getattr(import_module(module), cls)(
            **model_config,
            model_name="openai/stub",
            model_kwargs={"api_base": url, "api_key": "not-a-key", "temperature": 0.0},
            cost_tracking="ignore_errors",
        )
        agent = DefaultAgent(
            model,
            LocalEnvironment(cwd=str(work), env={"BUILD_DIR": str(work / "build")}),
            **{**config["agent"], "step_limit": step_limit, "cost_limit": 0.0, "output_path": output},
        )
        agent.run(task="Tidy the folder.")
    return output
