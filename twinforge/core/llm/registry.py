"""Lazy provider name -> client registry."""

from __future__ import annotations

from importlib import import_module

from twinforge.core.exceptions import ConfigError
from twinforge.core.llm.protocol import ChatModel
from twinforge.core.llm.scripted import ScriptedChat
from twinforge.core.settings import ModelSettings

_PROVIDERS = {
    "openai-compatible": "twinforge.core.llm.openai_chat:OpenAIChat",
    "openai": "twinforge.core.llm.openai_chat:OpenAIChat",
    "anthropic": "twinforge.core.llm.anthropic_chat:AnthropicChat",
}


def make_chat_model(settings: ModelSettings, role: str | None = None) -> ChatModel:
    """Build the client a ``[models.<role>]`` block describes.

    Args:
        settings: The role's settings.
        role: Role name, used in error messages.

    Returns:
        A :class:`~twinforge.core.llm.protocol.ChatModel`.

    Raises:
        ConfigError: Unknown provider (the message lists the valid names).
        ModelCallError: The provider needs an API key that is not in the environment.
    """
    if settings.provider == "scripted":
        if settings.script is None:
            raise ConfigError("provider 'scripted' needs a 'script' file", field=f"models.{role}.script")
        return ScriptedChat.from_file(settings.script)
    target = _PROVIDERS.get(settings.provider)
    if target is None:
        valid = ", ".join([*_PROVIDERS, "scripted"])
        raise ConfigError(f"unknown provider {settings.provider!r}; valid: {valid}", field=f"models.{role}.provider")
    module_name, class_name = target.split(":")
    cls = getattr(import_module(module_name), class_name)
    model: ChatModel = cls(settings, role=role)
    return model
