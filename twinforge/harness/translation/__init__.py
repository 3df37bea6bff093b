"""Shape translation for the model proxy: Messages <-> Chat <-> Responses (docs/runtime.md, "Model channel").

Used only when the upstream lacks the harness's shape (``[models.*] api_shapes``). Requests cross
through Chat Completions (:mod:`.to_chat`, :mod:`.from_chat`); replies cross through a neutral
:class:`~.turn.Turn` or its stream events (:mod:`.readers`, :mod:`.writers`), whole or streamed,
with token usage carried over. An image, a file or a stored response cannot cross and is refused
(:class:`TranslationRefused`).
"""

from __future__ import annotations

from typing import Any

from twinforge.harness.shapes import Shape
from twinforge.harness.translation.exceptions import TranslationRefused
from twinforge.harness.translation.from_chat import chat_to_messages, chat_to_responses
from twinforge.harness.translation.readers import StreamReader, read_turn
from twinforge.harness.translation.to_chat import messages_to_chat, responses_to_chat
from twinforge.harness.translation.turn import Ended, Failed, Turn
from twinforge.harness.translation.writers import StreamWriter, write_turn

__all__ = [
    "ReplyTranslator",
    "TranslationRefused",
    "Turn",
    "custom_tools",
    "translate_request",
    "translate_whole",
    "upstream_shape",
]


def upstream_shape(client: Shape, served: list[Shape]) -> Shape:
    """The shape a call goes upstream in: the harness's own where served, else Chat Completions, else the first."""
    if client in served:
        return client
    return "chat" if "chat" in served else served[0]


def custom_tools(shape: Shape, body: dict[str, Any]) -> frozenset[str]:
    """Names of a Responses request's ``custom`` (free-form) tools, whose calls go back as ``custom_tool_call``."""
    if shape != "responses":
        return frozenset()
    return frozenset(
        str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict) and t.get("type") == "custom"
    )


def translate_request(
    client: Shape, upstream: Shape, body: dict[str, Any], *, budget: int, openai: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """A request of the harness's shape in the upstream's shape.

    Args:
        client: The harness's shape.
        upstream: The upstream's shape.
        body: The request as the harness sent it (its reply budget already capped).
        budget: The role's ``max_tokens``, for a Messages upstream when the request names none.
        openai: The upstream is OpenAI's own API (Chat Completions' budget is then ``max_completion_tokens``).

    Returns:
        ``(upstream request, notes on what was dropped)``.

    Raises:
        TranslationRefused: Something in the request cannot cross (see the module docstring).
    """
    if client == upstream:
        return dict(body), []
    key = "max_completion_tokens" if openai else "max_tokens"
    if client == "messages":
        chat, notes = messages_to_chat(body, key)
    elif client == "responses":
        chat, notes = responses_to_chat(body, key)
    else:
        chat, notes = dict(body), []
    if upstream == "chat":
        return chat, notes
    out, more = chat_to_messages(chat, budget) if upstream == "messages" else chat_to_responses(chat)
    return out, notes + more


def translate_whole(
    client: Shape, upstream: Shape, payload: Any, model: str, custom: frozenset[str]
) -> tuple[dict[str, Any], Turn]:
    """A whole upstream reply in the harness's shape; returns ``(body, the reply read)``."""
    turn = read_turn(upstream, payload)
    return write_turn(client, turn, model, custom), turn


class ReplyTranslator:
    """Translate one streamed reply as its bytes arrive.

    Args:
        client: The harness's shape.
        upstream: The upstream's shape.
        model: The model name the harness asked for.
        custom: Names of the harness's Responses ``custom`` tools.

    Attributes:
        reader: What the upstream sent (its reply, whether it reached its end, an error in it).
        writer: What the harness got.
    """

    def __init__(self, client: Shape, upstream: Shape, model: str, custom: frozenset[str] = frozenset()) -> None:
        self.reader = StreamReader(upstream)
        self.writer = StreamWriter(client, model, custom)

    def feed(self, chunk: bytes) -> bytes:
        """The harness's bytes for ``chunk`` of the upstream's stream."""
        return b"".join(self.writer.write(event) for event in self.reader.feed(chunk))

    def end(self) -> bytes:
        """The upstream's stream ended: its last event, and an end mark for a Chat stream without ``[DONE]``.

        A last event may lack its blank line; a Chat upstream may end after its ``finish_reason``.
        """
        out = b"".join(self.writer.write(event) for event in self.reader.end())
        if self.reader.complete and self.reader.failed is None:
            out += self.writer.write(Ended())
        return out

    def fail(self, message: str, status: int) -> bytes:
        """An error event in the harness's shape (the stream was cut or the upstream failed)."""
        return self.writer.write(Failed(message, status))
