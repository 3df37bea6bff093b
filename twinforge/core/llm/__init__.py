"""LLM layer: provider clients behind one protocol, plus validated structured output."""

from twinforge.core.llm.protocol import ChatModel, Completion, Finish, Message
from twinforge.core.llm.registry import make_chat_model
from twinforge.core.llm.scripted import ScriptedChat
from twinforge.core.llm.structured import (
    ItemFailure,
    ItemsResult,
    ObjectResult,
    ReadItem,
    ReadList,
    describe_validation_error,
    feedback_messages,
    list_schema,
    read_items,
    refusal_line,
    refusal_message,
    request_items,
    request_object,
)
from twinforge.core.llm.usage import FlatUsage, PerItem, Usage

__all__ = [
    "ChatModel",
    "Completion",
    "Finish",
    "FlatUsage",
    "ItemFailure",
    "ItemsResult",
    "Message",
    "ObjectResult",
    "PerItem",
    "ReadItem",
    "ReadList",
    "ScriptedChat",
    "Usage",
    "describe_validation_error",
    "feedback_messages",
    "list_schema",
    "make_chat_model",
    "read_items",
    "refusal_line",
    "refusal_message",
    "request_items",
    "request_object",
]
