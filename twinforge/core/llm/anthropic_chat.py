"""Anthropic models through the ``anthropic`` SDK; structured output through a forced tool call."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import anthropic

from twinforge.core.exceptions import ModelCallError
from twinforge.core.llm.protocol import Completion, Finish, Message
from twinforge.core.settings import ModelSettings

# Messages API ``stop_reason`` values (API reference, "Messages": end_turn, max_tokens,
# stop_sequence, tool_use, pause_turn, refusal).
_FINISH: dict[str, Finish] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "stop",
    "max_tokens": "length",
    "refusal": "refusal",
}


class AnthropicChat:
    """Chat client for ``provider = "anthropic"``.

    With a schema, the schema becomes the input schema of a single tool the model is forced to
    call; the tool input is returned as the JSON text. Retries and timeouts are the SDK's own.
    """

    def __init__(self, settings: ModelSettings, role: str | None = None) -> None:
        key = os.environ.get(settings.api_key_env)
        if not key:
            raise ModelCallError(f"environment variable {settings.api_key_env} is not set", role=role)
        self._settings = settings
        self._role = role
        self._client = anthropic.Anthropic(
            api_key=key,
            base_url=settings.endpoint(),
            timeout=settings.timeout_s,
            max_retries=settings.http_retries,
        )

    @property
    def name(self) -> str:
        """``provider:model``."""
        return f"anthropic:{self._settings.model}"

    def complete(
        self, messages: list[Message], *, schema: dict[str, Any] | None = None, schema_name: str = "output"
    ) -> Completion:
        """Send one Messages API request; see :class:`~twinforge.core.llm.protocol.ChatModel`.

        Raises:
            ModelCallError: HTTP error or timeout after retries.
        """
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        kwargs: dict[str, Any] = {
            "model": self._settings.model,
            "max_tokens": self._settings.max_tokens,
            # anthropic 2.x dropped the typed argument; the API still takes the field
            "extra_body": {"temperature": self._settings.temperature},
            "messages": [m.model_dump() for m in messages if m.role != "system"],
        }
        if system:
            kwargs["system"] = system
        if schema is not None:
            kwargs["tools"] = [{"name": schema_name, "description": "Return the result.", "input_schema": schema}]
            kwargs["tool_choice"] = {"type": "tool", "name": schema_name}
        started = time.monotonic()
        try:
            response = self._client.messages.create(**kwargs)
        except anthropic.APIError as exc:
            raise ModelCallError(f"{self.name}: {type(exc).__name__}: {exc}", role=self._role) from exc
        text = ""
        for block in response.content:
            if block.type == "tool_use" and schema is not None:
                text = _tool_input_text(block.input)
                break
            if block.type == "text":
                text += block.text
        finish: Finish = _FINISH.get(str(response.stop_reason), "other")
        cached = response.usage.cache_read_input_tokens or 0
        return Completion(
            text="" if finish == "refusal" else text,
            # Anthropic counts cache reads apart from input_tokens (Messages API, "usage").
            prompt_tokens=response.usage.input_tokens + cached,
            cached_tokens=cached,
            completion_tokens=response.usage.output_tokens,
            seconds=time.monotonic() - started,
            finish=finish,
            refusal=text if finish == "refusal" else None,
            max_tokens=self._settings.max_tokens,
        )


def _tool_input_text(value: object) -> str:
    """The forced tool call's input as JSON text.

    Some servers and proxies send the input as a string that encodes the object (Anthropic's
    streaming form, ``partial_json``, passed on unparsed); it is decoded once. A string that is not
    JSON is returned as it is, so validation reports it.
    """
    if isinstance(value, str):
        try:
            decoded: object = json.loads(value, strict=False)
        except json.JSONDecodeError:
            return value
        return json.dumps(decoded)
    return json.dumps(value)
