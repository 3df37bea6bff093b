"""Anthropic Messages and OpenAI Responses requests as Chat Completions requests (docs/runtime.md, "Model channel").

Chat Completions is the pivot: every self-hosted server (vLLM, llama.cpp, SGLang) serves it. What
crosses: system text, the conversation's text, function tool calls and their results (in order,
each result right after the call that asked for it), the tool list and choice, the reply budget,
temperature, top_p, stop words, a JSON schema for the output, and streaming with usage. What does
not is dropped and named in the notes (provider-side tools, cache marks, thinking blocks, a client's
metadata), except images, files and stored-response references, which are refused
(:class:`TranslationRefused`): silently dropping them would change the task.
"""

from __future__ import annotations

import json
from typing import Any

from twinforge.harness.translation.exceptions import TranslationRefused

CUSTOM_INPUT = {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}
"""The parameters a Responses ``custom`` (free-form) tool gets as a function: one string, ``input``."""


def _text_of(part: str, content: Any, *, kinds: tuple[str, ...]) -> str:
    """The text of a content value: a string, or a list of text parts; anything else is refused."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise TranslationRefused(part, f"content of type {type(content).__name__} cannot be translated")
    texts = []
    for i, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in kinds:
            texts.append(str(block.get("text") or block.get("refusal") or ""))
        else:
            raise TranslationRefused(
                f"{part}[{i}]", f"a part of type {kind!r} (not text) cannot be translated between APIs"
            )
    return "\n".join(texts)


def _stream_fields(body: dict[str, Any]) -> dict[str, Any]:
    if body.get("stream") is True:
        return {"stream": True, "stream_options": {"include_usage": True}}
    return {}


def _one_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The leading system messages as one, later ones as user text.

    Many servers' chat templates (Qwen's, Llama's) refuse a system message anywhere but first.
    """
    head = []
    while messages and messages[0]["role"] == "system":
        head.append(str(messages.pop(0)["content"]))
    later = [{**m, "role": "user"} if m["role"] == "system" else m for m in messages]
    return ([{"role": "system", "content": "\n\n".join(head)}] if head else []) + later


def _common(body: dict[str, Any], out: dict[str, Any], budget_key: str, budget: Any) -> None:
    if isinstance(budget, int) and not isinstance(budget, bool):
        out[budget_key] = budget
    for key in ("temperature", "top_p"):
        if isinstance(body.get(key), int | float) and not isinstance(body.get(key), bool):
            out[key] = body[key]
    out.update(_stream_fields(body))


def messages_to_chat(body: dict[str, Any], budget_key: str = "max_tokens") -> tuple[dict[str, Any], list[str]]:
    """An Anthropic Messages request as a Chat Completions request.

    Args:
        body: The Messages request (``system``, ``messages``, ``tools``, ``tool_choice``, ...).
        budget_key: ``max_tokens`` (self-hosted servers) or ``max_completion_tokens`` (OpenAI).

    Returns:
        ``(chat request, notes on what was dropped)``.

    Raises:
        TranslationRefused: An image or document block, or content of no known shape.
    """
    notes: list[str] = []
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        messages.append({"role": "system", "content": _text_of("system", system, kinds=("text",))})
    for i, message in enumerate(body.get("messages") or []):
        if not isinstance(message, dict):
            raise TranslationRefused(f"messages[{i}]", "not an object")
        role, content = message.get("role"), message.get("content")
        if isinstance(content, str):
            messages.append({"role": "assistant" if role == "assistant" else "user", "content": content})
            continue
        if not isinstance(content, list):
            raise TranslationRefused(f"messages[{i}].content", "neither text nor a list of blocks")
        if role == "assistant":
            messages.append(_assistant_of_blocks(f"messages[{i}]", content, notes))
        else:
            messages.extend(_user_of_blocks(f"messages[{i}]", content, notes))
    out: dict[str, Any] = {"model": body.get("model"), "messages": _one_system(messages)}
    tools = _messages_tools(body.get("tools"), notes)
    if tools:
        out["tools"] = tools
        out.update(_messages_tool_choice(body.get("tool_choice")))
    if isinstance(body.get("stop_sequences"), list):
        out["stop"] = body["stop_sequences"]
    output = body.get("output_config")
    schema = output.get("format") if isinstance(output, dict) else None
    if isinstance(schema, dict) and schema.get("type") == "json_schema":
        out["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "output", "schema": schema.get("schema")},
        }
    for dropped in ("thinking", "metadata", "context_management", "mcp_servers", "container"):
        if dropped in body:
            notes.append(f"dropped {dropped} (Messages only)")
    _common(body, out, budget_key, body.get("max_tokens"))
    return out, notes


def _assistant_of_blocks(where: str, blocks: list[Any], notes: list[str]) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for j, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            arguments = json.dumps(block.get("input") if block.get("input") is not None else {})
            calls.append(
                {
                    "id": str(block.get("id")),
                    "type": "function",
                    "function": {"name": str(block.get("name")), "arguments": arguments},
                }
            )
        elif kind in ("thinking", "redacted_thinking"):
            notes.append(f"dropped {where}.content[{j}] ({kind}: its signature is Anthropic's only)")
        else:
            raise TranslationRefused(f"{where}.content[{j}]", f"an assistant {kind} block cannot be translated")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _user_of_blocks(where: str, blocks: list[Any], notes: list[str]) -> list[dict[str, Any]]:
    """Tool results first (each a ``tool`` message right after the assistant's calls), then the user's text."""
    results: list[dict[str, Any]] = []
    texts: list[str] = []
    for j, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_result":
            content = _text_of(f"{where}.content[{j}].content", block.get("content"), kinds=("text",))
            results.append({"role": "tool", "tool_call_id": str(block.get("tool_use_id")), "content": content})
        else:
            raise TranslationRefused(
                f"{where}.content[{j}]", f"a block of type {kind!r} (not text) cannot be translated between APIs"
            )
    if texts:
        results.append({"role": "user", "content": "\n\n".join(texts)})
    return results


def _messages_tools(tools: Any, notes: list[str]) -> list[dict[str, Any]]:
    out = []
    for i, tool in enumerate(tools or []):
        if not isinstance(tool, dict):
            continue
        if "input_schema" not in tool:  # a provider-side tool (web search, code execution, ...)
            notes.append(f"dropped tools[{i}] {tool.get('name') or tool.get('type')} (runs at Anthropic only)")
            continue
        function = {"name": tool.get("name"), "parameters": tool.get("input_schema") or {"type": "object"}}
        if tool.get("description"):
            function["description"] = tool["description"]
        out.append({"type": "function", "function": function})
    return out


def _messages_tool_choice(choice: Any) -> dict[str, Any]:
    if not isinstance(choice, dict):
        return {}
    kind = choice.get("type")
    out: dict[str, Any] = {}
    if kind == "auto":
        out["tool_choice"] = "auto"
    elif kind == "any":
        out["tool_choice"] = "required"
    elif kind == "none":
        out["tool_choice"] = "none"
    elif kind == "tool":
        out["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    if choice.get("disable_parallel_tool_use") is True:
        out["parallel_tool_calls"] = False
    return out


def responses_to_chat(body: dict[str, Any], budget_key: str = "max_tokens") -> tuple[dict[str, Any], list[str]]:
    """An OpenAI Responses request as a Chat Completions request.

    Args:
        body: The Responses request (``instructions``, ``input`` items, ``tools``, ...).
        budget_key: ``max_tokens`` (self-hosted servers) or ``max_completion_tokens`` (OpenAI).

    Returns:
        ``(chat request, notes on what was dropped)``.

    Raises:
        TranslationRefused: ``previous_response_id`` or an item reference (stored state), an image
            or file part, or an item of no known shape.
    """
    notes: list[str] = []
    for stored in ("previous_response_id", "conversation"):
        if body.get(stored):
            raise TranslationRefused(stored, "a stored response exists only at OpenAI; send the whole input instead")
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": str(body["instructions"])})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    kinds = ("input_text", "output_text", "refusal", "text")
    for i, item in enumerate(items or []):
        if not isinstance(item, dict):
            raise TranslationRefused(f"input[{i}]", "not an object")
        kind = item.get("type", "message")
        if kind == "message":
            role = {"developer": "system"}.get(str(item.get("role")), str(item.get("role")))
            text = _text_of(f"input[{i}].content", item.get("content"), kinds=kinds)
            if (
                role == "assistant"
                and messages
                and messages[-1]["role"] == "assistant"
                and not messages[-1].get("content")
            ):
                messages[-1]["content"] = text
            else:
                messages.append({"role": role, "content": text})
        elif kind in ("function_call", "custom_tool_call"):
            arguments = (
                item.get("arguments") if kind == "function_call" else json.dumps({"input": item.get("input", "")})
            )
            call = {
                "id": str(item.get("call_id")),
                "type": "function",
                "function": {"name": str(item.get("name")), "arguments": str(arguments or "")},
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant" and "tool_calls" in last:
                last["tool_calls"].append(call)
            elif last is not None and last["role"] == "assistant":
                last["tool_calls"] = [call]
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = _text_of(f"input[{i}].output", item.get("output"), kinds=kinds)
            messages.append({"role": "tool", "tool_call_id": str(item.get("call_id")), "content": output})
        elif kind == "reasoning":
            notes.append(f"dropped input[{i}] (reasoning: Chat Completions takes none back)")
        else:
            raise TranslationRefused(f"input[{i}]", f"a {kind} item cannot be translated to Chat Completions")
    out: dict[str, Any] = {"model": body.get("model"), "messages": _one_system(messages)}
    tools = _responses_tools(body.get("tools"), notes)
    if tools:
        out["tools"] = tools
        choice = body.get("tool_choice")
        if choice in ("auto", "none", "required"):
            out["tool_choice"] = choice
        elif isinstance(choice, dict) and choice.get("type") == "function":
            out["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
        if isinstance(body.get("parallel_tool_calls"), bool):
            out["parallel_tool_calls"] = body["parallel_tool_calls"]
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and isinstance(reasoning.get("effort"), str):
        out["reasoning_effort"] = reasoning["effort"]
    options = body.get("text")
    schema = options.get("format") if isinstance(options, dict) else None
    if isinstance(schema, dict) and schema.get("type") == "json_schema":
        spec = {k: schema[k] for k in ("name", "schema", "strict", "description") if k in schema}
        out["response_format"] = {"type": "json_schema", "json_schema": spec}
    _common(body, out, budget_key, body.get("max_output_tokens"))
    return out, notes


def _responses_tools(tools: Any, notes: list[str]) -> list[dict[str, Any]]:
    out = []
    for i, tool in enumerate(tools or []):
        if not isinstance(tool, dict):
            continue
        kind = tool.get("type")
        if kind == "function":
            function = {"name": tool.get("name"), "parameters": tool.get("parameters") or {"type": "object"}}
        elif kind == "custom":
            function = {"name": tool.get("name"), "parameters": CUSTOM_INPUT}
        else:  # namespaces, hosted tools (web search, file search, ...)
            notes.append(f"dropped tools[{i}] {tool.get('name') or kind} (a {kind} tool has no Chat Completions form)")
            continue
        if tool.get("description"):
            function["description"] = tool["description"]
        if kind == "function" and isinstance(tool.get("strict"), bool):
            function["strict"] = tool["strict"]
        out.append({"type": "function", "function": function})
    return out
