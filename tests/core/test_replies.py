"""Model replies as real servers send them (cases in tests/data/stage1/README.md).

Each reply shape goes through a stub HTTP server and the real provider SDK, then through generate
or review, so the whole path is the one a user runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import DATA
from tests.support.samples import blueprint_dict, review_dict, slot_refs
from tests.support.stage1 import slot_item
from twinforge.blueprints import Blueprint, BlueprintStore, Status
from twinforge.core.exceptions import StructuredOutputError
from twinforge.core.llm import Message, ScriptedChat, request_items, request_object
from twinforge.core.llm.registry import make_chat_model
from twinforge.core.llm.stub_server import (
    anthropic_reply,
    anthropic_tool_reply,
    openai_refusal,
    openai_reply,
    stub_server,
)
from twinforge.core.localmodel import ServerInfo
from twinforge.core.workspace import Workspace
from twinforge.generator import generate
from twinforge.generator.batch import slot_schema
from twinforge.reviewer import review_pending


def use_stub(workspace: Workspace, role: str, url: str, provider: str = "openai-compatible") -> None:
    settings = getattr(workspace.config.models, role)
    settings.provider = provider
    # one call per slot / blueprint, whatever the provider: these tests read each call's reply (the
    # one-call batch modes are tested in tests/generator/test_generate_batchmode.py and the reviewer's)
    settings.stage1_mode = "slots"
    settings.base_url = url[:-3] if provider == "anthropic" else url


def failures_of(workspace: Workspace) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((workspace.state_dir / "failures").glob("*.json"))]


# generation ---------------------------------------------------------------------------------


def test_fenced_reply_is_read_without_a_reask(workspace: Workspace) -> None:
    def fenced(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 200, openai_reply(f"```json\n{json.dumps(slot_item(body), indent=2)}\n```\n")

    with stub_server(fenced) as (url, received):
        use_stub(workspace, "generator", url)
        report = generate(workspace, cell="S2-R3")
    assert len(received) == 10  # one call per slot, none re-asked
    assert report.stored == 10 and not report.batches[0].failures


def test_byte_order_mark_is_dropped(workspace: Workspace) -> None:
    def bom(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 200, openai_reply("\ufeff" + json.dumps(slot_item(body)))

    with stub_server(bom) as (url, received):
        use_stub(workspace, "generator", url)
        report = generate(workspace, cell="S1-R2")
    assert len(received) == 10 and report.stored == 10


def test_prose_around_a_fence_names_the_cause_in_the_reask(workspace: Workspace) -> None:
    def chatty(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        text = json.dumps(slot_item(body))
        if len(received) == 1:
            return 200, openai_reply(f"Here is the blueprint:\n```json\n{text}\n```")
        return 200, openai_reply(text)

    with stub_server(chatty) as (url, received):
        use_stub(workspace, "generator", url)
        report = generate(workspace, cell="S2-R3", concurrency=1)  # the first request is the one answered chattily
    (batch,) = report.batches
    assert report.stored == 10 and len(received) == 11
    assert batch.first_time == 9 and batch.after_reask == 1
    reask = received[1]["body"]["messages"][-1]["content"]
    assert "code fence with other text around it" in reask
    assert "no code fence, no text before or after it" in reask


def test_reply_cut_at_max_tokens_is_reasked_and_says_so(workspace: Workspace) -> None:
    def cut(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        item = slot_item(body)
        text = json.dumps(item)
        if len(received) == 1:
            return 200, openai_reply(text[: text.index(item["trap"]) + 9], finish="length")  # mid-string
        return 200, openai_reply(text)

    with stub_server(cut) as (url, received):
        use_stub(workspace, "generator", url)
        report = generate(workspace, cell="S2-R3", concurrency=1)  # the first request is the one cut
    (batch,) = report.batches
    assert batch.usage.calls == 11 and len(batch.stored) == 10
    reask = received[1]["body"]["messages"][-1]["content"]
    assert "cut off at max_tokens=" in reask and "write shorter values" in reask


def test_reply_always_cut_is_stored_refused_naming_the_cut(workspace: Workspace) -> None:
    def cut(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        text = json.dumps(slot_item(body))
        return 200, openai_reply(text[:120], finish="length")

    workspace.config.models.generator.validation_retries = 0
    with stub_server(cut) as (url, received):
        use_stub(workspace, "generator", url)
        report = generate(workspace, cell="S2-R3", concurrency=1)  # the first request is the one cut
    (batch,) = report.batches
    assert len(received) == 10 and report.stored == 0 and len(batch.refused) == 10 and not batch.failures
    refused = BlueprintStore(workspace).refused()
    assert all("cut off at max_tokens=" in r.defects[0].message for r in refused)  # nothing proposed is lost
    (saved,) = failures_of(workspace)
    assert len(saved["replies"]) == 10  # every raw reply kept


@pytest.mark.parametrize("mode", ["slots", "batch"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_refusal_is_shown_saved_and_not_reasked(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, provider: str, mode: str
) -> None:
    monkeypatch.setenv("TWINFORGE_API_KEY", "sk-test")
    words = "I can't help with designing attacks on software supply chains."

    def refuse(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if provider == "anthropic":
            return 200, anthropic_reply([{"type": "text", "text": words}], stop_reason="refusal")
        return 200, openai_refusal(words)

    with stub_server(refuse) as (url, received):
        use_stub(workspace, "generator", url, provider)
        report = generate(workspace, cell="S2-R5", mode=mode)
    (batch,) = report.batches
    calls = 10 if mode == "slots" else 1  # each slot asked once, or the batch in one call; never re-asked
    assert len(received) == calls and report.stored == 0
    assert batch.refusal == words
    assert [f.errors for f in batch.failures] == [[f"model refused: {words}"]] * 10
    assert not any("JSON" in e for f in batch.failures for e in f.errors)
    (saved,) = failures_of(workspace)
    assert saved["refusal"] == words and saved["replies"] == [words] * calls


def test_anthropic_refusal_with_empty_content(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TWINFORGE_API_KEY", "sk-test")
    with stub_server(lambda p, b: (200, anthropic_reply([], stop_reason="refusal"))) as (url, received):
        use_stub(workspace, "generator", url, "anthropic")
        report = generate(workspace, cell="S2-R5")
    (batch,) = report.batches
    assert len(received) == 10 and batch.refusal == ""
    assert [f.errors for f in batch.failures] == [["model refused (no text given)"]] * 10


def test_anthropic_tool_input_sent_as_a_json_string(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TWINFORGE_API_KEY", "sk-test")

    def as_string(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 200, anthropic_tool_reply(body["tools"][0]["name"], json.dumps(slot_item(body)))

    with stub_server(as_string) as (url, received):
        use_stub(workspace, "generator", url, "anthropic")
        report = generate(workspace, cell="S2-R3")
    assert len(received) == 10 and report.stored == 10


# review ---------------------------------------------------------------------------------------


def proposed(workspace: Workspace) -> str:
    """Ten proposed blueprints from the scripted model; returns one id."""

    def respond(messages: list[Message], schema: dict[str, Any] | None) -> dict[str, Any]:
        assert schema is not None
        return slot_item({"response_format": {"type": "json_object", "schema": schema}})

    generate(workspace, cell="S2-R3", chat=ScriptedChat(respond))
    return BlueprintStore(workspace).records(Status.PROPOSED)[0].id


def test_review_fenced_reply_scored(workspace: Workspace) -> None:
    target = proposed(workspace)
    reply = "```json\n" + json.dumps(review_dict([5, 5, 4, 4, 4, 4])) + "\n```"
    with stub_server(lambda p, b: (200, openai_reply(reply))) as (url, received):
        use_stub(workspace, "reviewer", url)
        report = review_pending(workspace, ids=[target])
    (outcome,) = report.outcomes
    assert outcome.total == 26 and outcome.status is Status.KEPT and len(received) == 1


def test_review_refusal_not_reasked_and_saved(workspace: Workspace) -> None:
    target = proposed(workspace)
    words = "I won't score content about sabotaging databases."
    with stub_server(lambda p, b: (200, openai_refusal(words))) as (url, received):
        use_stub(workspace, "reviewer", url)
        report = review_pending(workspace, ids=[target])
    (outcome,) = report.outcomes
    assert len(received) == 1 and outcome.status is Status.PROPOSED
    assert outcome.error is not None and f"model refused: {words}" in outcome.error and "JSON" not in outcome.error
    (saved,) = failures_of(workspace)
    assert saved["replies"] == [words] and words in saved["error"]


def test_review_cut_at_max_tokens_says_so(workspace: Workspace) -> None:
    target = proposed(workspace)
    text = json.dumps(review_dict([4] * 6))
    with stub_server(lambda p, b: (200, openai_reply(text[:90], finish="length"))) as (url, received):
        use_stub(workspace, "reviewer", url)
        report = review_pending(workspace, ids=[target])
    (outcome,) = report.outcomes
    assert len(received) == 3
    assert outcome.error is not None and "cut off at max_tokens=1200" in outcome.error
    assert "cut off at max_tokens=1200" in received[1]["body"]["messages"][-1]["content"]


# the structured layer on its own ------------------------------------------------------------------


def test_scripted_cut_and_refusal_shapes() -> None:
    items = [blueprint_dict() for _ in range(3)]
    text = json.dumps({"blueprints": items})
    cut = text[: text.index(items[2]["harm_path"]) + 4]
    chat = ScriptedChat([{"reply": cut, "finish": "length"}, {"refusal": "no more"}])

    result = request_items(chat, [Message(role="user", content="x")], Blueprint, count=3, list_key="blueprints")
    assert len(result.items) == 2 and result.refusal == "no more"
    assert [f.errors for f in result.failures] == [["model refused: no more"]]
    assert result.replies == [cut, "no more"]


def test_number_cut_in_the_middle_is_not_kept() -> None:
    from pydantic import BaseModel

    class Point(BaseModel):
        x: int
        y: int

    chat = ScriptedChat([{"reply": '{"points": [{"x": 1, "y": 2}, {"x": 3, "y": 45', "finish": "length"}])
    result = request_items(chat, [Message(role="user", content="x")], Point, count=2, list_key="points", retries=0)
    assert [(p.x, p.y) for p in result.items] == [(1, 2)]
    assert "incomplete, the reply was cut off" in " ".join(result.failures[0].errors)


def test_object_reply_with_raw_control_characters_and_fence() -> None:
    from twinforge.blueprints import load_dimensions, reply_model

    text = "```\n" + json.dumps(review_dict([3] * 6)).replace("Scored 3", "Scored\t3") + "\n```"
    result = request_object(ScriptedChat([text]), [Message(role="user", content="x")], reply_model(load_dimensions()))
    assert result.value.realism.rationale.startswith("Scored\t3")  # type: ignore[attr-defined]


def test_case_files_are_in_the_repository() -> None:
    data = DATA / "stage1"
    assert {p.name for p in data.iterdir()} >= {"README.md", "escape-codes.reply.json", "long-reason.txt"}


@pytest.mark.model
def test_real_server_reply_cut_at_max_tokens_is_reported(gemma: ServerInfo, tmp_path: Path) -> None:
    """The real llama.cpp server's finish_reason "length" reaches the user as a cut, not as bad JSON.

    One slot's call as the generator makes it (slot schema, real server), so the test stays short.
    """
    ws = Workspace.init(tmp_path / "ws", port=gemma.port, local_model="gemma3-270m")
    settings = ws.config.models.generator
    settings.max_tokens = 60  # no blueprint fits
    chat = make_chat_model(settings, role="generator")
    ref = slot_refs("S2-R3")[0]
    messages = [Message(role="user", content=f"Write one S2-R3 blueprint grounded in incident {ref} as JSON.")]
    with pytest.raises(StructuredOutputError) as caught:
        request_object(chat, messages, Blueprint, schema=slot_schema("S2-R3", ref), retries=0)
    assert caught.value.attempts == 1
    assert any("cut off at max_tokens=60" in e for e in caught.value.errors), caught.value.errors
