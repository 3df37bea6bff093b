"""Chat Completions requests as Anthropic Messages or OpenAI Responses requests (docs/runtime.md, "Model channel").

The other half of the pivot (:mod:`twinforge.harness.translation.to_chat`): for an upstream that
lacks Chat Completions (Anthropic's API serves Messages only). Messages wants the system text apart,
user and assistant turns alternating (tool results are user turns) and a reply budget on every
request; Responses wants items (messages, function calls, their outputs) and ``store: false``, so
no state stays at the provider.
"""

from __future__ import annotations

import json
from typing import Any

from twinforge.harness.translation.exceptions import TranslationRefused

TEXT_PARTS = ("text", "input_text", "output_text", "refusal")


def _text(part: str, content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise TranslationRefused(part, f"content of type {type(content).__name__} cannot be translated")
    texts = []
    for i, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind not in TEXT_PARTS:
            raise TranslationRefused(
                f"{part}[{i}]", f"a part of type {kind!r} (not text) cannot be translated between APIs"
            )
        texts.append(str(block.get("text") or block.get("refusal") or ""))
    return "\n".join(texts)


def _arguments(where: str, text: Any, notes: list[str]) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) and text.strip() else {}
    except ValueError:
        notes.append(f"{where}: arguments are not JSON; sent as {{}}")
        return {}
    return value if isinstance(value, dict) else {"value": value}


def chat_to_messages(body: dict[str, Any], default_budget: int) -> tuple[dict[str, Any], list[str]]:
    """A Chat Completions request as an Anthropic Messages request.

    Args:
        body: The Chat Completions request.
        default_budget: ``max_tokens`` when the request names none (Messages requires one).

    Returns:
        ``(messages request, notes on what was dropped or changed)``.

    Raises:
        TranslationRefused: An image, audio or file part, or a message of no known shape.
    """
    notes: list[str] = []
    system: list[str] = []
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if turns and turns[-1]["role"] == role:  # Messages alternates user and assistant turns
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for i, message in enumerate(body.get("messages") or []):
        if not isinstance(message, dict):
            raise TranslationRefused(f"messages[{i}]", "not an object")
        role, where = message.get("role"), f"messages[{i}].content"
        if role in ("system", "developer"):
            system.append(_text(where, message.get("content")))
        elif role == "user":
            add("user", [{"type": "text", "text": _text(where, message.get("content"))}])
        elif role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": str(message.get("tool_call_id")),
                "content": _text(where, message.get("content")),
            }
            add("user", [result])
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            text = _text(where, message.get("content"))
            if text:
                blocks.append({"type": "text", "text": text})
            for j, call in enumerate(message.get("tool_calls") or []):
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict):
                    raise TranslationRefused(f"messages[{i}].tool_calls[{j}]", "not a function call")
                arguments = _arguments(f"messages[{i}].tool_calls[{j}]", function.get("arguments"), notes)
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": str(call.get("id")),
                        "name": str(function.get("name")),
                        "input": arguments,
                    }
                )
            if blocks:
                add("assistant", blocks)
        else:
            raise TranslationRefused(f"messages[{i}]", f"role {role!r} cannot be translated")
    out: dict[str, Any] = {"model": body.get("model"), "messages": turns}
    if system:
        out["system"] = "\n\n".join(system)
    budget = body.get("max_completion_tokens", body.get("max_tokens"))
    out["max_tokens"] = budget if isinstance(budget, int) and not isinstance(budget, bool) else default_budget
    tools = [_anthropic_tool(t) for t in body.get("tools") or [] if isinstance(t, dict) and t.get("type") == "function"]
    if tools:
        out["tools"] = tools
        choice = _anthropic_choice(body.get("tool_choice"), body.get("parallel_tool_calls"))
        if choice:
            out["tool_choice"] = choice
    temperature = body.get("temperature")
    if isinstance(temperature, int | float) and not isinstance(temperature, bool):
        out["temperature"] = min(float(temperature), 1.0)  # Messages takes 0-1
        if temperature > 1:
            notes.append(f"temperature {temperature} lowered to 1.0 (the Messages maximum)")
    if isinstance(body.get("top_p"), int | float):
        out["top_p"] = body["top_p"]
    stop = body.get("stop")
    if stop:
        out["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    for dropped in ("response_format", "reasoning_effort", "logprobs", "n", "seed"):
        if dropped in body:
            notes.append(f"dropped {dropped} (no Messages form)")
    if body.get("stream") is True:
        out["stream"] = True
    return out, notes


def _anthropic_tool(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool.get("function") or {}
    out = {
        "name": function.get("name"),
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }
    if function.get("description"):
        out["description"] = function["description"]
    return out


def _anthropic_choice(choice: Any, parallel: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if choice == "auto":
        out = {"type": "auto"}
    elif choice == "required":
        out = {"type": "any"}
    elif choice == "none":
        out = {"type": "none"}
    elif isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        out = {"type": "tool", "name": choice["function"].get("name")}
    if parallel is False:
        out = {"type": "auto", **out, "disable_parallel_tool_use": True}
    return out


def chat_to_responses(body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A Chat Completions request as an OpenAI Responses request (stateless: ``store`` false).

    Args:
        body: The Chat Completions request.

    Returns:
        ``(responses request, notes on what was dropped)``.

    Raises:
        TranslationRefused: An image, audio or file part, or a message of no known shape.
    """
    notes: list[str] = []
    items: list[dict[str, Any]] = []
    for i, message in enumerate(body.get("messages") or []):
        if not isinstance(message, dict):
            raise TranslationRefused(f"messages[{i}]", "not an object")
        role, where = message.get("role"), f"messages[{i}].content"
        if role in ("system", "developer", "user"):
            part = "input_text"
            items.append(
                {
                    "type": "message",
                    "role": role,
                    "content": [{"type": part, "text": _text(where, message.get("content"))}],
                }
            )
        elif role == "assistant":
            text = _text(where, message.get("content"))
            if text:
                items.append(
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
                )
            for call in message.get("tool_calls") or []:
                function = call.get("function") if isinstance(call, dict) else {}
                function = function if isinstance(function, dict) else {}
                items.append(
                    {
                        "type": "function_call",
                        "call_id": str(call.get("id")),
                        "name": str(function.get("name")),
                        "arguments": str(function.get("arguments") or ""),
                    }
                )
        elif role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": str(message.get("tool_call_id")),
                    "output": _text(where, message.get("content")),
                }
            )
        else:
            raise TranslationRefused(f"messages[{i}]", f"role {role!r} cannot be translated")
    out: dict[str, Any] = {"model": body.get("model"), "input": items, "store": False}
    tools = []
    for tool in body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict):
            tools.append(
                {
                    "type": "function",
                    **{k: function[k] for k in ("name", "description", "parameters", "strict") if k in function},
                }
            )
    if tools:
        out["tools"] = tools
        choice = body.get("tool_choice")
        if choice in ("auto", "none", "required"):
            out["tool_choice"] = choice
        elif isinstance(choice, dict) and isinstance(choice.get("function"), dict):
            out["tool_choice"] = {"type": "function", "name": choice["function"].get("name")}
        if isinstance(body.get("parallel_tool_calls"), bool):
            out["parallel_tool_calls"] = body["parallel_tool_calls"]
    budget = body.get("max_completion_tokens", body.get("max_tokens"))
    if isinstance(budget, int) and not isinstance(budget, bool):
        out["max_output_tokens"] = budget
    for key in ("temperature", "top_p"):
        if isinstance(body.get(key), int | float):
            out[key] = body[key]
    if isinstance(body.get("reasoning_effort"), str):
        out["reasoning"] = {"effort": body["reasoning_effort"]}
    schema = body.get("response_format")
    if isinstance(schema, dict) and schema.get("type") == "json_schema" and isinstance(schema.get("json_schema"), dict):
        out["text"] = {"format": {"type": "json_schema", **schema["json_schema"]}}
    if "stop" in body:
        notes.append("dropped stop (no Responses form)")
    if body.get("stream") is True:
        out["stream"] = True
    return out, notes
