"""Check a model block before a long run: one small streamed call in each API shape, through the proxy.

A maintainer who points twinforge at a hosted or self-hosted model learns at once whether every
harness can reach it (docs/runtime.md, "A worked configuration"): each shape goes through the
recording proxy as a harness's call would, translated where the upstream lacks it, with the block's
own settings (reply budget, reasoning), and must come back readable, with no error in it. Nothing is
retried: a failing upstream shows as it is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx

from twinforge.core.settings import ModelSettings
from twinforge.harness.proxy import ModelProxy
from twinforge.harness.shapes import PATHS, SHAPES, Shape, read_stream
from twinforge.harness.translation import upstream_shape

SHELL = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
ASK = "Run `true` with the bash tool, then say done."


@dataclass(frozen=True)
class ShapeCheck:
    """How one shape's call went.

    Attributes:
        shape: The shape the call was made in (a harness's).
        upstream: The shape the upstream answered in.
        status: The HTTP status the caller got.
        ok: A 200 with text or a tool call and no error in the stream.
        detail: What came back (text, tool names) or what went wrong.
        seconds: Wall time of the call.
    """

    shape: Shape
    upstream: Shape
    status: int
    ok: bool
    detail: str
    seconds: float


def _request(shape: Shape, model: str) -> dict[str, object]:
    if shape == "messages":
        tool: object = {"name": "bash", "description": "Run a shell command", "input_schema": SHELL}
        return {
            "model": model,
            "max_tokens": 256,
            "stream": True,
            "messages": [{"role": "user", "content": ASK}],
            "tools": [tool],
        }
    if shape == "responses":
        tool = {"type": "function", "name": "bash", "description": "Run a shell command", "parameters": SHELL}
        return {"model": model, "stream": True, "input": ASK, "tools": [tool], "store": False}
    tool = {"type": "function", "function": {"name": "bash", "description": "Run a shell command", "parameters": SHELL}}
    return {"model": model, "stream": True, "messages": [{"role": "user", "content": ASK}], "tools": [tool]}


def preflight(
    settings: ModelSettings, shapes: tuple[Shape, ...] = SHAPES, timeout_s: float = 120.0
) -> list[ShapeCheck]:
    """One streamed call per shape to the model block ``settings`` through a proxy of its own.

    Args:
        settings: The model block (its key is read from the variable it names).
        shapes: The shapes to try (the harnesses' own: Messages, Chat Completions, Responses).
        timeout_s: Budget of all the calls together, seconds.

    Returns:
        One :class:`ShapeCheck` per shape, in order.
    """
    proxy = ModelProxy(retry_waits_s=()).start()
    checks: list[ShapeCheck] = []
    try:
        token = proxy.grant("preflight", settings, cap=len(shapes), seconds=timeout_s)
        headers = {"authorization": f"Bearer {token}", "x-api-key": token, "anthropic-version": "2023-06-01"}
        for shape in shapes:
            started = time.monotonic()
            up = upstream_shape(shape, settings.served_shapes())
            try:
                response = httpx.post(
                    f"{proxy.url}{PATHS[shape]}",
                    json=_request(shape, settings.model),
                    headers=headers,
                    timeout=timeout_s,
                )
            except httpx.HTTPError as exc:
                checks.append(
                    ShapeCheck(shape, up, 0, False, f"{type(exc).__name__}: {exc}", time.monotonic() - started)
                )
                continue
            reply = read_stream(shape, response.content) if response.status_code == 200 else None
            said = reply.text.strip()[:80] if reply else ""
            tools = ", ".join(c.name for c in reply.tool_calls) if reply else ""
            ok = reply is not None and not reply.error and bool(said or tools)
            detail = (
                (reply.error if reply and reply.error else f"text {said!r}, tools [{tools}]")
                if reply
                else response.text[:300]
            )
            checks.append(ShapeCheck(shape, up, response.status_code, ok, detail, time.monotonic() - started))
        proxy.release(token)
    finally:
        proxy.stop()
    return checks
