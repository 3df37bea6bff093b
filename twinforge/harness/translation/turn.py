"""One model reply in no API's shape: what translation carries between shapes (docs/runtime.md, "Model channel").

A reply is read from the upstream's shape into a :class:`Turn` (whole) or a sequence of
:data:`Event` values (streamed), and written from those into the harness's shape. Only what the
three APIs share crosses: text, reasoning text, function tool calls, the stop reason and token
usage. Provider-only parts (Anthropic's thinking signatures, Responses' encrypted reasoning) stay
behind: no other API could take them back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Stop = Literal["stop", "length", "tool_calls", "content_filter", "refusal"]
"""Why a reply ended, in Chat Completions' words (``refusal`` is Anthropic's own stop reason)."""


@dataclass
class Tokens:
    """Token usage of one reply, counted the OpenAI way (Anthropic's cache reads are added to input).

    Attributes:
        input: Prompt tokens, cached ones included.
        cached: Of those, read from the provider's prompt cache.
        output: Generated tokens, reasoning included.
        reasoning: Of those, reasoning tokens (0 when unknown).
        seen: The upstream reported usage at all.
        written: Of the prompt tokens, written to the provider's prompt cache (Anthropic's
            ``cache_creation_input_tokens``, priced apart; 0 elsewhere).
    """

    input: int = 0
    cached: int = 0
    output: int = 0
    reasoning: int = 0
    seen: bool = False
    written: int = 0


@dataclass
class Call:
    """One function tool call: the upstream's id, the tool's name, its arguments as JSON text."""

    id: str
    name: str
    arguments: str = ""


@dataclass
class Turn:
    """A whole reply.

    Attributes:
        id: The upstream's reply id ('' when none).
        model: The model that answered.
        text: Its text (a refusal's text included).
        reasoning: Its reasoning text, where the upstream shows it.
        calls: Its tool calls, in order.
        stop: Why it ended.
        tokens: Its usage.
    """

    id: str = ""
    model: str = ""
    text: str = ""
    reasoning: str = ""
    calls: list[Call] = field(default_factory=list)
    stop: Stop = "stop"
    tokens: Tokens = field(default_factory=Tokens)


@dataclass
class Started:
    """The reply began (its id and model, where the upstream says them)."""

    id: str = ""
    model: str = ""


@dataclass
class TextDelta:
    """More reply text."""

    text: str


@dataclass
class ReasoningDelta:
    """More reasoning text."""

    text: str


@dataclass
class CallStarted:
    """A tool call began; ``index`` numbers the reply's calls from 0."""

    index: int
    id: str
    name: str


@dataclass
class ArgumentsDelta:
    """More of call ``index``'s arguments (JSON text)."""

    index: int
    text: str


@dataclass
class Finished:
    """The reply's stop reason."""

    stop: Stop


@dataclass
class UsageSeen:
    """Usage so far (a later one replaces an earlier one field by field where it is larger)."""

    tokens: Tokens


@dataclass
class Failed:
    """The upstream reported an error inside the stream."""

    message: str
    status: int = 502


@dataclass
class Ended:
    """The stream's end mark arrived (Chat ``[DONE]``, Messages ``message_stop``, Responses ``response.completed``)."""


Event = Started | TextDelta | ReasoningDelta | CallStarted | ArgumentsDelta | Finished | UsageSeen | Failed | Ended


def merge_tokens(old: Tokens, new: Tokens) -> Tokens:
    """Usage reported in parts (Messages: input at the start, output at the end): keep the larger of each field."""
    return Tokens(
        input=max(old.input, new.input),
        cached=max(old.cached, new.cached),
        output=max(old.output, new.output),
        reasoning=max(old.reasoning, new.reasoning),
        seen=old.seen or new.seen,
        written=max(old.written, new.written),
    )


def count(value: object) -> int:
    """A token count as the upstream sent it; anything but a non-negative whole number is 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    try:
        return max(int(value), 0)
    except (ValueError, OverflowError):
        return 0
