"""LLM layer: provider clients behind one protocol, plus validated structured output."""

from twinforge.llm.protocol import ChatModel, Completion, Finish, Message
from twinforge.llm.registry import make_chat_model
from twinforge.llm.scripted import ScriptedChat
from twinforge.llm.structured import (
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

__all__ = [
    "ChatModel",
    "Completion",
    "Finish",
    "ItemFailure",
    "ItemsResult",
    "Message",
    "ObjectResult",
    "ScriptedChat",
    "describe_validation_error",
    "list_schema",
    "make_chat_model",
    "refusal_line",
    "refusal_message",
    "request_items",
    "request_object",
]
