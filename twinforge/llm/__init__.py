"""LLM layer: provider clients behind one protocol, plus validated structured output."""

from twinforge.llm.protocol import ChatModel, Completion, Message
from twinforge.llm.registry import make_chat_model
from twinforge.llm.scripted import ScriptedChat
from twinforge.llm.structured import (
    ItemFailure,
    ItemsResult,
    ObjectResult,
    describe_validation_error,
    list_schema,
    request_items,
    request_object,
)

__all__ = [
    "ChatModel",
    "Completion",
    "ItemFailure",
    "ItemsResult",
    "Message",
    "ObjectResult",
    "ScriptedChat",
    "describe_validation_error",
    "list_schema",
    "make_chat_model",
    "request_items",
    "request_object",
]
