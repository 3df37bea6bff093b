"""Tokens of a stream whose upstream never reported its usage: counted by the proxy (docs/runtime.md, "Model channel").

A stream cut by either side (the harness closing it, the upstream ending early) or one whose
upstream sent no usage carried tokens all the same: the provider bills what it generated, and the
spend ceiling must see them. The proxy counts the completion from the text, reasoning and tool
calls it received, with the model's own tokenizer where the upstream offers one (llama.cpp's
``llama-server``: ``POST /tokenize`` with ``{"content": text}`` answers ``{"tokens": [...]}``), else
estimated at :data:`CHARS_PER_TOKEN` characters a token (the estimate ``count_tokens`` uses without
a Messages upstream). A prompt the upstream never counted is estimated from the request the same
way. The record says which (``usage_source: "counted"``, ``counted_by``).
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict

from twinforge.core.settings import ModelSettings
from twinforge.harness.translation.turn import Turn

CHARS_PER_TOKEN = 4
"""Characters a token, for the estimate (English text with the usual BPE tokenizers)."""
PROMPT_FIELDS = ("system", "instructions", "messages", "input", "tools")
"""The request fields a prompt estimate reads (every shape's)."""
TOKENIZE_TIMEOUT_S = 2.0
"""Seconds the upstream's tokenizer gets before the estimate is used instead."""


class Counted(BaseModel):
    """Tokens the proxy counted.

    Attributes:
        tokens: How many.
        by: ``tokenizer`` (the upstream's own ``/tokenize``) or ``estimate`` (:data:`CHARS_PER_TOKEN`).
    """

    model_config = ConfigDict(frozen=True)

    tokens: int
    by: Literal["tokenizer", "estimate"]


def received_text(turn: Turn) -> str:
    """Everything of a reply that is generated tokens: text, reasoning, and each tool call's name and arguments."""
    return turn.text + turn.reasoning + "".join(call.name + call.arguments for call in turn.calls)


def estimate(text: str) -> int:
    """Tokens of ``text`` at :data:`CHARS_PER_TOKEN` characters a token (0 for no text)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def tokenize_url(settings: ModelSettings) -> str | None:
    """Where the upstream's tokenizer is: ``/tokenize`` beside its ``/v1`` (``None``: a hosted provider has none)."""
    base = settings.endpoint()
    if base is None or settings.provider != "openai-compatible":
        return None
    return base.rstrip("/").removesuffix("/v1") + "/tokenize"


async def count(text: str, settings: ModelSettings, client: httpx.AsyncClient) -> Counted:
    """Tokens of ``text`` for the model of ``settings``: its tokenizer where it answers, else the estimate.

    Args:
        text: What the upstream generated (:func:`received_text`).
        settings: The model block (its endpoint and key; only an ``openai-compatible`` one is asked).
        client: The proxy's upstream client.

    Returns:
        The count and how it was made; the tokenizer gets :data:`TOKENIZE_TIMEOUT_S` seconds.
    """
    url = tokenize_url(settings)
    if text and url is not None:
        key = os.environ.get(settings.api_key_env, "")
        headers = {"authorization": f"Bearer {key}"} if key else {}
        try:
            response = await client.post(url, json={"content": text}, headers=headers, timeout=TOKENIZE_TIMEOUT_S)
            tokens = response.json().get("tokens") if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            tokens = None
        if isinstance(tokens, list):
            return Counted(tokens=len(tokens), by="tokenizer")
    return Counted(tokens=estimate(text), by="estimate")


def prompt_estimate(request: dict[str, Any] | None) -> int:
    """Prompt tokens of a request its upstream never counted: its JSON at :data:`CHARS_PER_TOKEN` characters a token."""
    if not request:
        return 0
    return estimate(json.dumps({k: v for k, v in request.items() if k in PROMPT_FIELDS}))
