"""The chat-model role: what every provider client offers."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict


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
        completion_tokens: Tokens generated (0 when unknown).
        seconds: Wall time of the call including transport retries.
        truncated: True when generation stopped at ``max_tokens``.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    truncated: bool = False


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
