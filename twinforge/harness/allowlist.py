"""What the model proxy forwards of a request: one allow-list per API shape (docs/runtime.md, "Model channel").

The five harnesses send a small, known set of request fields, tool types and headers (read from
their recorded requests; docs/runtime.md, "Model channel", "What the proxy forwards").
The agent holds the run token, so anything else the upstream would honour is an agent's choice, not
the harness's. Two kinds of extra are told apart:

- **refused** (HTTP 400 in the request's shape, recorded with ``refused = "allow-list"``): what makes
  the provider fetch or call out on the agent's behalf, past the task container's egress log:
  Anthropic's ``mcp_servers`` and server tools (``web_fetch_*``, ``web_search_*``,
  ``code_execution_*``, ...), OpenAI Responses' built-in tools (``web_search``, ``file_search``,
  ``code_interpreter``, ``mcp``, ``image_generation``, ``computer_use*``), Chat's
  ``web_search_options``, an image, file or document the provider would download from a URL, and
  an ``anthropic-beta`` value that turns such a feature on; any other tool type too (a tool type the
  harnesses never send may run on the provider's side);
- **dropped** (named in the call's ``notes``): any other field or header value not on the list.

The tables below are the rules; :func:`screen` applies them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from twinforge.harness.shapes import Shape

_COMMON = frozenset(
    {"model", "stream", "temperature", "top_p", "stop", "metadata", "tools", "tool_choice", "parallel_tool_calls"}
)


class ShapeRules(BaseModel):
    """The allow-list of one API shape.

    Attributes:
        fields: Top-level request body fields forwarded as sent.
        refused_fields: Fields refused, with why (the provider would call out).
        tool_types: Tool ``type`` values forwarded (``""``: a tool without a type, Messages' client tool).
        refused_tool_types: Tool type prefixes refused, with why; a type on neither list is refused too.
        headers: Client headers forwarded, each with the values allowed (every comma-separated value
            of ``anthropic-beta`` is checked on its own; the others are dropped).
        refused_betas: ``anthropic-beta`` value prefixes refused, with why.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    fields: frozenset[str]
    refused_fields: dict[str, str] = Field(default_factory=dict)
    tool_types: frozenset[str]
    refused_tool_types: dict[str, str] = Field(default_factory=dict)
    headers: dict[str, frozenset[str]] = Field(default_factory=dict)
    refused_betas: dict[str, str] = Field(default_factory=dict)


FETCHES = "the provider would fetch or call out on the agent's behalf, past the run's egress log"
UNKNOWN_TOOL = "a tool type the harnesses never send (it may run on the provider's side)"

RULES: dict[Shape, ShapeRules] = {
    # Mini-SWE-agent (LiteLLM), OpenCode, Pi; plus Chat's usual sampling and output fields. Not ``n``
    # (several replies for one call) nor a ``service_tier``: both would spend past the list price.
    "chat": ShapeRules(
        fields=_COMMON
        | {
            "messages",
            "max_tokens",
            "max_completion_tokens",
            "stream_options",
            "seed",
            "presence_penalty",
            "frequency_penalty",
            "logit_bias",
            "logprobs",
            "top_logprobs",
            "response_format",
            "reasoning_effort",
            "user",
            "store",
        },
        refused_fields={"web_search_options": f"web search: {FETCHES}"},
        tool_types=frozenset({"function"}),
    ),
    # Codex CLI; Mini-SWE-agent, OpenCode and Pi for an OpenAI model.
    "responses": ShapeRules(
        fields=_COMMON
        | {
            "input",
            "instructions",
            "max_output_tokens",
            "reasoning",
            "include",
            "store",
            "text",
            "prompt_cache_key",
            "client_metadata",
            "user",
            "truncation",
            # stored state, not a fetch: forwarded as it is, refused by name where it cannot be translated
            "previous_response_id",
            "conversation",
        },
        tool_types=frozenset({"function", "custom", "namespace", "local_shell"}),
        refused_tool_types={
            "web_search": f"a provider-side web search: {FETCHES}",
            "file_search": "a provider-side file search over stored vector stores",
            "code_interpreter": "code run on the provider's side",
            "mcp": f"a remote MCP server: {FETCHES}",
            "image_generation": "a provider-side image generator",
            "computer_use": "a provider-side computer-use tool",
        },
    ),
    # Claude Code (and count_tokens).
    "messages": ShapeRules(
        fields=_COMMON | {"messages", "system", "max_tokens", "thinking", "output_config", "top_k", "stop_sequences"},
        refused_fields={
            "mcp_servers": f"remote MCP servers: {FETCHES}",
            "container": "a provider-side code-execution container",
        },
        tool_types=frozenset({"", "custom"}),
        refused_tool_types={
            "web_fetch": f"a server tool that fetches URLs: {FETCHES}",
            "web_search": f"a server tool that searches the web: {FETCHES}",
            "code_execution": "a server tool that runs code on the provider's side",
            "computer": "a computer-use tool",
            "mcp": f"a remote MCP toolset: {FETCHES}",
        },
        headers={
            "anthropic-version": frozenset({"2023-06-01"}),
            # What Claude Code 2.1.220 sends, and betas that only change the reply's form
            # (docs/runtime.md, "Model channel", "What the proxy forwards").
            "anthropic-beta": frozenset(
                {
                    "claude-code-20250219",
                    "interleaved-thinking-2025-05-14",
                    "mid-conversation-system-2026-04-07",
                    "effort-2025-11-24",
                    "fine-grained-tool-streaming-2025-05-14",
                    "context-management-2025-06-27",
                    "prompt-caching-2024-07-31",
                    "token-counting-2024-11-01",
                    "structured-outputs-2025-11-13",
                }
            ),
        },
        refused_betas={
            "mcp-client": f"the MCP connector: {FETCHES}",
            "web-fetch": f"the web fetch tool: {FETCHES}",
            "web-search": f"the web search tool: {FETCHES}",
            "code-execution": "the code execution tool",
            "computer-use": "the computer-use tool",
            "files-api": "the Files API (documents the provider keeps)",
            "skills": "provider-side skills (code execution)",
        },
    ),
}
"""The allow-list per shape (docs/runtime.md, "Model channel", "What the proxy forwards")."""


class Screened(BaseModel):
    """A request after the allow-list.

    Attributes:
        body: The body to forward (fields off the list dropped).
        headers: The client headers to forward (lower-case names; values off the list dropped).
        dropped: What was dropped, for the call's notes.
        refused: Why the request is refused (``None``: forward it); names the field, tool or header.
    """

    model_config = ConfigDict(frozen=True)

    body: dict[str, Any]
    headers: dict[str, str]
    dropped: list[str]
    refused: str | None = None


def _prefix(value: str, table: dict[str, str]) -> str | None:
    return next((why for prefix, why in table.items() if value.startswith(prefix)), None)


def _tool_refusal(rules: ShapeRules, tools: Any, where: str = "tools") -> str | None:
    """Why a tool list is refused (``None``: every tool is on the list); a ``namespace`` is checked inside."""
    if tools is None:
        return None
    if not isinstance(tools, list):
        return f"{where}: not a list"
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            return f"{where}[{i}]: not an object"
        kind = tool.get("type")
        kind = kind if isinstance(kind, str) else ""
        if kind not in rules.tool_types:
            why = _prefix(kind, rules.refused_tool_types) or UNKNOWN_TOOL
            return f"{where}[{i}] of type '{kind}' is refused: {why}"
        inner = _tool_refusal(rules, tool.get("tools"), f"{where}[{i}].tools") if kind == "namespace" else None
        if inner is not None:
            return inner
    return None


def _is_remote(url: Any) -> bool:
    return isinstance(url, str) and not url.strip().lower().startswith("data:")


NESTED = ("content", "output")
"""Where content parts hold more parts: a message's ``content``, a tool result's ``content`` (Messages,
Chat) or ``output`` (Responses)."""


def _remote_content(value: Any, where: str) -> str | None:
    """The first content part the provider would download from a URL, as ``path: what``."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _remote_content(item, f"{where}[{i}]")
            if found:
                return found
        return None
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    source = value.get("source")
    if isinstance(source, dict) and source.get("type") == "url":
        return f"{where}: a '{kind}' block with a URL source (the provider downloads it)"
    if kind == "image_url":
        image = value.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        if _is_remote(url):
            return f"{where}: an image_url that is not a data: URL (the provider downloads it)"
    if kind == "input_image" and _is_remote(value.get("image_url")):
        return f"{where}: an input_image URL that is not a data: URL (the provider downloads it)"
    if kind == "input_file" and value.get("file_url"):
        return f"{where}: an input_file with a file_url (the provider downloads it)"
    for key in NESTED:  # a message's blocks, a tool result's blocks; never a tool call's arguments
        if isinstance(value.get(key), list):
            found = _remote_content(value[key], f"{where}.{key}")
            if found:
                return found
    return None


def _headers(rules: ShapeRules, headers: Mapping[str, str], dropped: list[str]) -> tuple[dict[str, str], str | None]:
    """The client headers to forward and why they are refused (``None``: not refused); drops go to ``dropped``."""
    out: dict[str, str] = {}
    for name, allowed in rules.headers.items():
        raw = headers.get(name)
        if raw is None:
            continue
        values = [v.strip() for v in raw.split(",")] if name == "anthropic-beta" else [raw.strip()]
        kept = []
        for value in filter(None, values):
            why = _prefix(value, rules.refused_betas) if name == "anthropic-beta" else None
            if why is not None:
                return out, f"header {name}: '{value}' is refused: {why}"
            if value in allowed:
                kept.append(value)
            else:
                dropped.append(f"header {name}: {value}")
        if kept:
            out[name] = ",".join(kept)
    return out, None


def screen(shape: Shape, body: dict[str, Any], headers: Mapping[str, str]) -> Screened:
    """Apply the shape's allow-list to one request.

    Args:
        shape: The API shape the harness spoke.
        body: The request body as sent (not changed).
        headers: The client's headers (lower-case names, as Starlette gives them).

    Returns:
        What to forward, what was dropped, and why it is refused (``refused`` set: forward nothing).
    """
    rules = RULES[shape]
    dropped: list[str] = []
    for name, why in rules.refused_fields.items():
        if name in body:
            return Screened(body={}, headers={}, dropped=[], refused=f"field '{name}' is refused: {why}")
    refusal = _tool_refusal(rules, body.get("tools"))
    for field in ("messages", "input", "system"):
        refusal = refusal or _remote_content(body.get(field), field)
    kept_headers, header_refusal = _headers(rules, headers, dropped)
    refusal = refusal or header_refusal
    if refusal is not None:
        return Screened(body={}, headers={}, dropped=[], refused=refusal)
    out = {k: v for k, v in body.items() if k in rules.fields}
    dropped[:0] = [f"field {k}" for k in body if k not in rules.fields]
    return Screened(body=out, headers=kept_headers, dropped=dropped)
