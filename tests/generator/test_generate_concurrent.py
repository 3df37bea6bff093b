"""A batch asks its slots at once (docs/stage1.md, "Slots are asked at once"); the batch rules still hold."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from tests.support.samples import blueprint_dict
from tests.support.stage1 import asked
from twinforge.blueprints import BlueprintStore
from twinforge.core.exceptions import ModelCallError
from twinforge.core.llm import Message, ScriptedChat
from twinforge.core.workspace import Workspace
from twinforge.generator import generate


def test_four_slots_are_in_flight_together_and_stored_in_slot_order(workspace: Workspace) -> None:
    together = threading.Barrier(4)  # the first four slots are answered only once all four were asked
    seen: list[int] = []

    def respond(messages: list[Message], schema: dict[str, Any] | None) -> dict[str, Any]:
        slot, cell, ref = asked((messages, schema))
        seen.append(slot)
        if slot <= 4:
            together.wait(60)
        return blueprint_dict(cell=cell, ref=ref)

    report = generate(workspace, cell="S2-R3", chat=ScriptedChat(respond), concurrency=4)
    (batch,) = report.batches
    assert sorted(seen) == list(range(1, 11)) and not together.broken
    records = BlueprintStore(workspace).records()
    assert sorted(r.provenance.slot or 0 for r in records) == list(range(1, 11))
    by_id = {r.id: r.provenance.slot for r in records}
    assert [by_id[i] for i in batch.stored] == list(range(1, 11))
    assert batch.wall_seconds > 0 and batch.usage.calls == 10


def test_two_slots_replying_the_same_blueprint_at_once_cannot_both_pass(workspace: Workspace) -> None:
    same = blueprint_dict(cell="S1-R6")
    both = threading.Barrier(2)  # slots 1 and 2 reply the same blueprint at the same moment
    replied: dict[int, int] = {}
    lock = threading.Lock()

    def respond(messages: list[Message], schema: dict[str, Any] | None) -> dict[str, Any]:
        slot, cell, ref = asked((messages, schema))
        with lock:
            replied[slot] = replied.get(slot, 0) + 1
            first = replied[slot] == 1
        if slot in (1, 2) and first:
            both.wait(60)
            return {**same, "source_reference": ref}
        return blueprint_dict(cell=cell, ref=ref)

    chat = ScriptedChat(respond)
    report = generate(workspace, cell="S1-R6", chat=chat, concurrency=2)
    assert len(report.batches[0].stored) == 10
    reasks = [m[-1].content for m, _ in chat.calls if "repeats another blueprint of its cell" in m[-1].content]
    assert len(reasks) == 1  # exactly one of the two was re-asked as a repeat of the other
    tasks = [r.blueprint.engineering_task for r in BlueprintStore(workspace).records()]
    assert tasks.count(same["engineering_task"]) == 1


def test_a_transport_failure_keeps_the_filled_slots_and_names_the_unasked(workspace: Workspace) -> None:
    failing = threading.Event()

    def respond(messages: list[Message], schema: dict[str, Any] | None) -> dict[str, Any]:
        slot, cell, ref = asked((messages, schema))
        if slot == 3:
            failing.set()
            raise ModelCallError("server went away", role="generator")
        return blueprint_dict(cell=cell, ref=ref)

    report = generate(workspace, cell="S1-R5", chat=ScriptedChat(respond), concurrency=2)
    (batch,) = report.batches
    assert failing.is_set()
    slots = sorted(r.provenance.slot or 0 for r in BlueprintStore(workspace).records())
    assert 3 not in slots and len(slots) + len(batch.failures) == 10
    unasked = [e for f in batch.failures for e in f.errors if e.startswith("not asked:")]
    assert unasked and all("server went away" in e for e in unasked)
    assert any("model call failed" in note for note in batch.notes)
    assert not workspace.repo.is_dirty(untracked_files=True)


def test_a_transport_failure_before_any_slot_filled_is_raised(workspace: Workspace) -> None:
    def respond(messages: list[Message], schema: dict[str, Any] | None) -> dict[str, Any]:
        raise ModelCallError("connection refused", role="generator")

    with pytest.raises(ModelCallError, match="connection refused"):
        generate(workspace, cell="S1-R5", chat=ScriptedChat(respond), concurrency=4)
    assert BlueprintStore(workspace).records() == []


def test_a_batch_counts_the_tokens_of_the_slots_it_refused(workspace: Workspace) -> None:
    """Every call is paid for: the batch's usage sums the refused slots' calls and tokens too."""
    from twinforge.core.llm import make_chat_model
    from twinforge.core.llm.stub_server import openai_reply, stub_server
    from twinforge.core.settings import ModelSettings

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        form = body["response_format"]
        props = (form.get("schema") or form["json_schema"]["schema"])["properties"]
        item = blueprint_dict(cell=props["taxonomy_id"]["enum"][0], ref=props["source_reference"]["enum"][0])
        ref = props["source_reference"]["enum"][0]
        if sum(map(ord, ref)) % 2:  # about half the slots reply an empty trap, re-asks too: they fail
            item["trap"] = ""
        return 200, openai_reply(json.dumps(item))  # each reply: 11 prompt + 7 completion tokens

    with stub_server(reply) as (url, received):
        chat = make_chat_model(ModelSettings(base_url=url, model="stub", validation_retries=0), "generator")
        (batch,) = generate(workspace, cell="S2-R3", chat=chat, concurrency=2).batches
    assert batch.refused and batch.stored  # both kinds are in this batch
    assert batch.refused_by == {"field-missing": len(batch.refused)}
    calls = len(received)
    assert calls > 10  # the failing slots were re-asked
    assert batch.usage.calls == calls
    assert batch.usage.prompt_tokens == 11 * calls and batch.usage.completion_tokens == 7 * calls
