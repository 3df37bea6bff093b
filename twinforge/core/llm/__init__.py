"""LLM layer: provider clients behind one protocol, plus validated structured output."""

from twinforge.core.llm.protocol import ChatModel, Completion, Finish, Message
from twinforge.core.llm.registry import make_chat_model
from twinforge.core.llm.scripted import ScriptedChat
from twinforge.core.llm.structured import (
    ItemFailure,
    ItemsResult,
    ObjectResult,
    describe_validation_error,
    list_schema,
    refusal_line,
    refusal_message,
    request_items,
    request_object,
)
from twinforge.core.llm.usage import FlatUsage, Usage

__all__ = [
    "ChatModel",
    "Completion",
    "Finish",
    "FlatUsage",
    "ItemFailure",
    "ItemsResult",
    "Message",
    "ObjectResult",
    "ScriptedChat",
    "Usage",
    "describe_validation_error",
    "list_schema",
    "make_chat_model",
    "refusal_line",
    "refusal_message",
    "request_items",
    "request_object",
]
