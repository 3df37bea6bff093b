"""A scripted chat model: the shipped fake for tests and offline demos (no network, no weights)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import yaml

from twinforge.core.exceptions import ConfigError, ModelCallError
from twinforge.core.llm.protocol import Completion, Finish, Message

Reply = str | dict[str, Any] | list[Any]
Responder = Callable[[list[Message], dict[str, Any] | None], Reply]
_FINISHES = get_args(Finish)


class ScriptedChat:
    """Replays replies in order, or answers through a function of the request.

    A reply that is a dict or list is sent as its JSON text; a string is sent verbatim (so a test
    can send malformed JSON). A script entry may be ``{"match": "text", "reply": ...}``: it is used
    for the first request whose last message contains ``text``. A reply may also end the way real
    servers end one: ``{"reply": ..., "finish": "length"}`` (cut at max_tokens) or
    ``{"refusal": "text"}`` (the model declined).

    Attributes:
        calls: Every request received, as ``(messages, schema)``, in arrival order.
    """

    def __init__(self, replies: list[Any] | Responder, *, name: str = "scripted") -> None:
        self._replies = replies if callable(replies) else list(replies)
        self._name = name
        self._lock = threading.Lock()
        self.calls: list[tuple[list[Message], dict[str, Any] | None]] = []

    @classmethod
    def from_file(cls, path: Path) -> ScriptedChat:
        """Load a YAML list of replies.

        Raises:
            ConfigError: The file is missing or is not a YAML list.
        """
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read script: {exc}", path=path) from exc
        if not isinstance(data, list):
            raise ConfigError("a script must be a YAML list of replies", path=path)
        return cls(data, name=f"scripted:{path.name}")

    @property
    def name(self) -> str:
        """``scripted`` or ``scripted:<file>``."""
        return self._name

    def _next(self, messages: list[Message], schema: dict[str, Any] | None) -> Reply:
        if callable(self._replies):
            return self._replies(messages, schema)  # outside the lock: a responder may block
        with self._lock:
            return self._pop(messages)

    def _pop(self, messages: list[Message]) -> Reply:
        if callable(self._replies):
            raise TypeError("a responder has no reply list")
        last = messages[-1].content if messages else ""
        for i, entry in enumerate(self._replies):
            if isinstance(entry, dict) and set(entry) == {"match", "reply"}:
                if str(entry["match"]) in last:
                    reply: Reply = self._replies.pop(i)["reply"]
                    return reply
                continue
            popped: Reply = self._replies.pop(i)
            return popped
        raise ModelCallError(f"{self._name}: script exhausted after {len(self.calls)} calls")

    def complete(
        self, messages: list[Message], *, schema: dict[str, Any] | None = None, schema_name: str = "output"
    ) -> Completion:
        """Return the next scripted reply; see :class:`~twinforge.core.llm.protocol.ChatModel`.

        Raises:
            ModelCallError: The script has no reply left for this request.
        """
        with self._lock:
            self.calls.append((list(messages), schema))
        reply = self._next(messages, schema)
        finish: Finish = "stop"
        refusal = None
        if isinstance(reply, dict) and set(reply) == {"refusal"}:
            finish, refusal, reply = "refusal", str(reply["refusal"]), ""
        elif isinstance(reply, dict) and set(reply) == {"reply", "finish"} and reply["finish"] in _FINISHES:
            finish, reply = reply["finish"], reply["reply"]
        text = reply if isinstance(reply, str) else json.dumps(reply)
        return Completion(
            text=text,
            prompt_tokens=sum(len(m.content) // 4 for m in messages),
            completion_tokens=len(text) // 4,
            finish=finish,
            refusal=refusal,
        )
