from __future__ import annotations

import json

import pytest

from tests.support.samples import blueprint_dict, review_dict
from twinforge.blueprints import Blueprint, load_dimensions, reply_model
from twinforge.core.exceptions import ModelCallError, StructuredOutputError
from twinforge.core.llm import Message, ScriptedChat, list_schema, request_items, request_object

PROMPT = [Message(role="user", content="give me things")]
Reply = reply_model(load_dimensions())


def batch(items: list[object]) -> dict[str, object]:
    return {"blueprints": items}


def test_object_bad_json_then_valid_feeds_error_back() -> None:
    chat = ScriptedChat(["{not json", review_dict([4] * 6)])
    result = request_object(chat, PROMPT, Reply)
    assert result.value.realism.score == 4  # type: ignore[attr-defined]
    assert len(chat.calls) == 2
    retry_messages, _ = chat.calls[1]
    assert retry_messages[-2].role == "assistant" and retry_messages[-2].content == "{not json"
    assert "not valid JSON" in retry_messages[-1].content


@pytest.mark.parametrize(
    ("broken", "needle"),
    [
        ({k: v for k, v in review_dict([4] * 6).items() if k != "difficulty"}, "difficulty: Field required"),
        ({**review_dict([4] * 6), "novelty": {"score": 3, "rationale": "extra"}}, "novelty: Extra inputs"),
        ({**review_dict([4] * 6), "realism": {"score": 7, "rationale": "too high"}}, "realism.score"),
        ({**review_dict([4] * 6), "realism": {"score": "high", "rationale": "wrong type"}}, "realism.score"),
    ],
)
def test_object_invalid_reasons_reach_the_model(broken: dict[str, object], needle: str) -> None:
    chat = ScriptedChat([broken, review_dict([3] * 6)])
    result = request_object(chat, PROMPT, Reply)
    assert result.value.verifiability.score == 3  # type: ignore[attr-defined]
    assert needle in chat.calls[1][0][-1].content


def test_object_gives_up_after_two_retries_with_raw_kept() -> None:
    chat = ScriptedChat(["nope 1", "nope 2", "nope 3", review_dict([5] * 6)])
    with pytest.raises(StructuredOutputError) as info:
        request_object(chat, PROMPT, Reply, retries=2)
    assert info.value.attempts == 3
    assert info.value.raw == "nope 3"
    assert "not valid JSON" in str(info.value)
    assert len(chat.calls) == 3


def test_schema_is_sent_with_every_call() -> None:
    chat = ScriptedChat([review_dict([4] * 6)])
    request_object(chat, PROMPT, Reply, schema_name="review")
    _, schema = chat.calls[0]
    assert schema is not None and set(schema["required"]) == set(load_dimensions().ids)


def test_items_full_batch_in_one_call() -> None:
    chat = ScriptedChat([batch([blueprint_dict() for _ in range(10)])])
    result = request_items(chat, PROMPT, Blueprint, count=10, list_key="blueprints")
    assert len(result.items) == 10 and not result.failures and result.attempts == 1
    schema = chat.calls[0][1]
    assert schema is not None
    assert schema["properties"]["blueprints"]["minItems"] == 10 == schema["properties"]["blueprints"]["maxItems"]


def test_items_short_batch_asks_only_for_the_missing() -> None:
    chat = ScriptedChat([batch([blueprint_dict() for _ in range(7)]), batch([blueprint_dict() for _ in range(3)])])
    result = request_items(chat, PROMPT, Blueprint, count=10, list_key="blueprints")
    assert len(result.items) == 10 and not result.failures
    retry, schema = chat.calls[1]
    assert "7 items given, 10 required" in retry[-1].content
    assert "exactly 3 new" in retry[-1].content
    assert schema is not None and schema["properties"]["blueprints"]["maxItems"] == 3


def test_items_invalid_ones_replaced_valid_ones_kept() -> None:
    good = [blueprint_dict() for _ in range(8)]
    bad_extra = {**blueprint_dict(), "severity": "high"}
    bad_missing = {k: v for k, v in blueprint_dict().items() if k != "harm_path"}
    chat = ScriptedChat(
        [batch([*good[:4], bad_extra, *good[4:], bad_missing]), batch([blueprint_dict(), blueprint_dict()])]
    )
    result = request_items(chat, PROMPT, Blueprint, count=10, list_key="blueprints")
    assert len(result.items) == 10
    assert [b.engineering_task for b in result.items[:8]] == [g["engineering_task"] for g in good]
    feedback = chat.calls[1][0][-1].content
    assert "blueprints[5].severity" in feedback and "blueprints[10].harm_path" in feedback


def test_items_too_many_are_trimmed_with_note() -> None:
    chat = ScriptedChat([batch([blueprint_dict() for _ in range(12)])])
    result = request_items(chat, PROMPT, Blueprint, count=10, list_key="blueprints")
    assert len(result.items) == 10 and result.attempts == 1
    assert any("12 items" in n for n in result.notes)


def test_items_persistent_failures_reported_per_slot_rest_kept() -> None:
    bad = {**blueprint_dict(), "taxonomy_id": "S7-R3"}
    replies = [batch([blueprint_dict() for _ in range(8)] + [bad, bad])] + [batch([bad, bad])] * 2
    chat = ScriptedChat(replies)
    result = request_items(chat, PROMPT, Blueprint, count=10, list_key="blueprints", retries=2)
    assert len(result.items) == 8
    assert [f.slot for f in result.failures] == [9, 10]
    assert all("taxonomy_id" in " ".join(f.errors) for f in result.failures)
    assert json.loads(result.failures[0].raw)["taxonomy_id"] == "S7-R3"
    assert result.attempts == 3


def test_items_document_not_an_object() -> None:
    chat = ScriptedChat(["[1, 2]", "```json\n{}```", '{"blueprints": 3}'])
    result = request_items(chat, PROMPT, Blueprint, count=10, list_key="blueprints")
    assert not result.items and len(result.failures) == 10
    assert "expected an object with a list under 'blueprints'" in " ".join(result.failures[0].errors)


def test_items_extra_check_applies() -> None:
    def only_s1(bp: Blueprint) -> None:
        if bp.source != "S1":
            raise ValueError("must be S1")

    chat = ScriptedChat([batch([blueprint_dict("S2-R1"), blueprint_dict("S1-R1")]), batch([blueprint_dict("S1-R2")])])
    result = request_items(chat, PROMPT, Blueprint, count=2, list_key="blueprints", check=only_s1)
    assert [b.taxonomy_id for b in result.items] == ["S1-R1", "S1-R2"]
    assert "blueprints[1]: must be S1" in chat.calls[1][0][-1].content


def test_list_schema_hoists_defs() -> None:
    schema = list_schema("xs", Reply.model_json_schema(), 3)
    assert "$defs" in schema and "$defs" not in schema["properties"]["xs"]["items"]


def test_raw_newlines_inside_strings_are_tolerated() -> None:
    text = json.dumps(review_dict([4] * 6)).replace("Scored 4", "Scored\n4")
    result = request_object(ScriptedChat([text]), PROMPT, Reply)
    assert result.value.realism.rationale == "Scored\n4 because it is so."  # type: ignore[attr-defined]


def test_boolean_score_refused() -> None:
    data = review_dict([4] * 6)
    data["realism"]["score"] = True
    with pytest.raises(Exception, match="score must be an integer"):
        Reply.model_validate(data)


def test_failed_reask_keeps_valid_items_and_all_replies() -> None:
    def respond(messages: list[Message], schema: object) -> object:
        if len(messages) > 1:
            raise ModelCallError("server went away")
        return batch([blueprint_dict() for _ in range(9)])

    result = request_items(ScriptedChat(respond), PROMPT, Blueprint, count=10, list_key="blueprints")
    assert len(result.items) == 9
    (failure,) = result.failures
    assert "re-ask" in " ".join(failure.errors) and "server went away" in " ".join(failure.errors)
    assert len(result.replies) == 1


def test_failed_first_call_raises() -> None:
    def respond(messages: list[Message], schema: object) -> object:
        raise ModelCallError("down")

    with pytest.raises(ModelCallError):
        request_items(ScriptedChat(respond), PROMPT, Blueprint, count=10, list_key="blueprints")
