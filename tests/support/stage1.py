"""Scripted Stage I models for the generator and reviewer tests."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tests.support.samples import blueprint_dict
from twinforge.core.llm import Message, ScriptedChat

SLOT_OF = re.compile(r"\(slot (\d+) of a batch of \d+\)")
Reply = dict[str, Any] | str | Callable[[str, str], dict[str, Any]]


def schema_of(body: dict[str, Any]) -> dict[str, Any]:
    """The blueprint schema a request (OpenAI or Anthropic shape) sends."""
    return body["response_format"]["schema"] if "response_format" in body else body["tools"][0]["input_schema"]


def asked(call: tuple[list[Message], dict[str, Any] | None]) -> tuple[int, str, str]:
    """(slot number, cell, incident ref) of one generator call."""
    messages, schema = call
    assert schema is not None
    props = schema["properties"]
    match = SLOT_OF.search(messages[1].content)
    assert match is not None
    return int(match.group(1)), props["taxonomy_id"]["enum"][0], props["source_reference"]["enum"][0]


def scripted_slots(overrides: dict[int, list[Reply]] | None = None) -> ScriptedChat:
    """A generator answering each slot's call with a valid blueprint citing the slot's incident.

    ``overrides[n]`` lists replies for slot ``n``'s successive calls (a dict, raw text, or a function
    of ``(cell, ref)``); once used up, the slot gets valid blueprints again.
    """
    queues = {slot: list(replies) for slot, replies in (overrides or {}).items()}

    def respond(messages: list[Message], schema: dict[str, Any] | None) -> Any:
        slot, cell, ref = asked((messages, schema))
        queue = queues.get(slot)
        if queue:
            reply = queue.pop(0)
            return reply(cell, ref) if callable(reply) else reply
        return blueprint_dict(cell=cell, ref=ref)

    return ScriptedChat(respond)


def answering() -> ScriptedChat:
    """A generator that answers every slot with a valid blueprint."""
    return scripted_slots()


def slot_item(body: dict[str, Any]) -> dict[str, Any]:
    """A valid blueprint for the slot the request asks for (its schema fixes the cell and the incident)."""
    props = schema_of(body)["properties"]
    return blueprint_dict(cell=props["taxonomy_id"]["enum"][0], ref=props["source_reference"]["enum"][0])
