"""Scripted Stage I models for the generator and reviewer tests."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tests.support.samples import blueprint_dict
from twinforge.core.llm import Message, ScriptedChat

SLOT_OF = re.compile(r"\(slot (\d+) of a batch of \d+\)")
BATCH_REF = re.compile(r'^  source_reference: "(.+)"$', re.MULTILINE)
Reply = dict[str, Any] | str | Callable[[str, str], dict[str, Any]]
BatchReply = Any | Callable[[str, list[str]], Any]


def schema_of(body: dict[str, Any]) -> dict[str, Any]:
    """The schema a request sends: OpenAI ``json_schema``, llama.cpp ``json_object`` or Anthropic tool use."""
    if "response_format" not in body:
        return dict(body["tools"][0]["input_schema"])
    form = body["response_format"]
    return dict(form["json_schema"]["schema"] if form.get("type") == "json_schema" else form["schema"])


def asked(call: tuple[list[Message], dict[str, Any] | None]) -> tuple[int, str, str]:
    """(slot number, cell, incident ref) of one generator call."""
    messages, schema = call
    assert schema is not None
    props = schema["properties"]
    match = SLOT_OF.search(messages[1].content)
    assert match is not None
    return int(match.group(1)), props["taxonomy_id"]["enum"][0], props["source_reference"]["enum"][0]


def is_batch_call(schema: dict[str, Any] | None) -> bool:
    """Whether a generator call is the one call of a whole batch (its schema holds a list of blueprints)."""
    return schema is not None and "blueprints" in schema.get("properties", {})


def batch_asked(call: tuple[list[Message], dict[str, Any] | None]) -> tuple[str, list[str]]:
    """(cell, the slots' incident refs in slot order) of a one-call batch."""
    messages, schema = call
    assert schema is not None and is_batch_call(schema)
    cell = schema["properties"]["blueprints"]["items"]["properties"]["taxonomy_id"]["enum"][0]
    return cell, BATCH_REF.findall(messages[1].content)


def ten_for(cell: str, refs: list[str]) -> dict[str, Any]:
    """A one-call batch reply: a valid blueprint for every slot, in slot order."""
    return {"blueprints": [blueprint_dict(cell=cell, ref=ref) for ref in refs]}


def scripted_slots(
    overrides: dict[int, list[Reply]] | None = None, batches: list[BatchReply] | None = None
) -> ScriptedChat:
    """A generator answering each slot's call with a valid blueprint citing the slot's incident.

    ``overrides[n]`` lists replies for slot ``n``'s successive calls (a dict, raw text, or a function
    of ``(cell, ref)``); once used up, the slot gets valid blueprints again. A one-call batch (batch
    mode) is answered with the next of ``batches`` (a reply, or a function of ``(cell, refs)`` with
    the slots' refs in order), else with ten valid blueprints in slot order.
    """
    queues = {slot: list(replies) for slot, replies in (overrides or {}).items()}
    whole = list(batches or [])

    def respond(messages: list[Message], schema: dict[str, Any] | None) -> Any:
        if is_batch_call(schema):
            cell, refs = batch_asked((messages, schema))
            reply = whole.pop(0) if whole else ten_for
            return reply(cell, refs) if callable(reply) else reply
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
