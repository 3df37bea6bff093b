"""OpenAI and OpenAI-compatible endpoints (vLLM, llama.cpp server) through the ``openai`` SDK."""

from __future__ import annotations

import os
import time
from typing import Any

import openai

from twinforge.core.exceptions import ModelCallError
from twinforge.core.llm.protocol import Completion, Finish, Message
from twinforge.core.localmodel.server import exited_server_note
from twinforge.core.settings import ModelSettings

_NO_KEY = "no-key-needed"  # local OpenAI-compatible servers ignore the key but the SDK wants one
# OpenAI chat completions ``finish_reason`` values (API reference, "The chat completion object").
_FINISH: dict[str, Finish] = {
    "stop": "stop",
    "length": "length",
    "content_filter": "refusal",
    "tool_calls": "stop",
    "function_call": "stop",
}


class OpenAIChat:
    """Chat client for ``provider = "openai"`` and ``"openai-compatible"``.

    Transport errors and timeouts are retried by the SDK itself (``http_retries`` times with
    exponential backoff, each attempt bounded by ``timeout_s``), so a call never hangs.
    """

    def __init__(self, settings: ModelSettings, role: str | None = None) -> None:
        key = os.environ.get(settings.api_key_env)
        if not key:
            if settings.provider == "openai":
                raise ModelCallError(f"environment variable {settings.api_key_env} is not set", role=role)
            key = _NO_KEY
        self._settings = settings
        self._role = role
        self._client = openai.OpenAI(
            api_key=key,
            base_url=settings.endpoint(),
            timeout=settings.timeout_s,
            max_retries=settings.http_retries,
        )

    @property
    def name(self) -> str:
        """``provider:model``."""
        return f"{self._settings.provider}:{self._settings.model}"

    def _response_format(self, schema: dict[str, Any], schema_name: str) -> dict[str, Any]:
        if self._settings.structured_output == "json_object":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_schema", "json_schema": {"name": schema_name, "schema": schema}}

    def complete(
        self, messages: list[Message], *, schema: dict[str, Any] | None = None, schema_name: str = "output"
    ) -> Completion:
        """Send one chat completion request; see :class:`~twinforge.core.llm.protocol.ChatModel`.

        Raises:
            ModelCallError: HTTP error, timeout after retries, or an empty reply.
        """
        kwargs: dict[str, Any] = {
            "model": self._settings.model,
            "messages": [m.model_dump() for m in messages],
            "temperature": self._settings.temperature,
            "max_tokens": self._settings.max_tokens,
        }
        if schema is not None:
            kwargs["response_format"] = self._response_format(schema, schema_name)
        started = time.monotonic()
        try:
            response = self._client.chat.completions.create(**kwargs)
        except openai.APIError as exc:
            message = f"{self.name} at {self._settings.endpoint()}: {type(exc).__name__}: {exc}"
            endpoint = self._settings.endpoint()
            refused = isinstance(exc, openai.APIConnectionError)
            note = exited_server_note(endpoint) if refused and endpoint else None
            raise ModelCallError(f"{message}; {note}" if note else message, role=self._role) from exc
        if not response.choices:
            raise ModelCallError(f"{self.name} returned no choices", role=self._role)
        choice = response.choices[0]
        usage = response.usage
        refusal = getattr(choice.message, "refusal", None)
        finish: Finish = _FINISH.get(str(choice.finish_reason), "other")
        if refusal is not None:
            finish = "refusal"
        elif finish == "refusal":
            refusal = "the provider's content filter stopped the reply"
        details = usage.prompt_tokens_details if usage else None
        return Completion(
            text=choice.message.content or "",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            cached_tokens=(details.cached_tokens or 0) if details else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            seconds=time.monotonic() - started,
            finish=finish,
            refusal=refusal,
            max_tokens=self._settings.max_tokens,
        )
