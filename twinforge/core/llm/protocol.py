"""The chat-model role: what every provider client offers."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from twinforge.core.llm.usage import Usage

Finish = Literal["stop", "length", "refusal", "other"]
"""Why generation ended, across providers: ``stop`` (the model finished, including a forced tool
call), ``length`` (cut at ``max_tokens``: OpenAI ``finish_reason "length"``, Anthropic ``stop_reason
"max_tokens"``), ``refusal`` (OpenAI ``message.refusal`` or ``finish_reason "content_filter"``,
Anthropic ``stop_reason "refusal"``), ``other`` (anything else a server reports)."""


class Message(BaseModel):
    """One chat message."""

    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


class Completion(BaseModel):
    """One model reply with its accounting.

    Attributes:
        text: The reply text (for schema calls: the JSON document).
        prompt_tokens: Tokens in the request, as the server counted them (0 when unknown).
        cached_tokens: Of those, the tokens the server took from its prompt cache instead of
            evaluating them (OpenAI ``usage.prompt_tokens_details.cached_tokens``, Anthropic
            ``usage.cache_read_input_tokens``; 0 when unknown).
        completion_tokens: Tokens generated (0 when unknown).
        seconds: Wall time of the call including transport retries.
        finish: Why generation ended (see :data:`Finish`).
        refusal: The model's refusal text when ``finish`` is ``refusal`` (may be empty).
        max_tokens: The completion cap the request was sent with, when known (to say where a
            reply was cut).
    """

    text: str
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    finish: Finish = "stop"
    refusal: str | None = None
    max_tokens: int | None = None

    @property
    def usage(self) -> Usage:
        """This reply as one call's :class:`Usage` (what every stage sums)."""
        return Usage(
            calls=1,
            prompt_tokens=max(self.prompt_tokens, 0),
            cached_tokens=max(self.cached_tokens, 0),
            completion_tokens=max(self.completion_tokens, 0),
            seconds=max(self.seconds, 0.0),
        )

    @property
    def truncated(self) -> bool:
        """True when generation stopped at ``max_tokens``."""
        return self.finish == "length"

    @property
    def refused(self) -> bool:
        """True when the model (or the provider's filter) declined to answer."""
        return self.finish == "refusal"

    @property
    def raw(self) -> str:
        """What the model sent: the text, or the refusal text when it refused (kept in failure files)."""
        if self.refused and not self.text:
            return self.refusal or ""
        return self.text


class ChatModel(Protocol):
    """A chat endpoint. Implementations: OpenAI-style, Anthropic, scripted (fake)."""

    @property
    def name(self) -> str:
        """``provider:model`` as recorded in provenance."""
        ...

    def complete(
        self, messages: list[Message], *, schema: dict[str, Any] | None = None, schema_name: str = "output"
    ) -> Completion:
        """Send ``messages``; with ``schema``, ask for a JSON document of that JSON schema.

        Raises:
            ModelCallError: The call failed after the transport's bounded retries.
        """
        ...
