"""The reviewer in one call per batch (docs/stage1.md, "One call per batch"): reviews keyed by blueprint id."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.samples import blueprint_dict, review_dict, scores_for
from tests.support.stage1 import answering, schema_of
from twinforge.blueprints import Blueprint, BlueprintRecord, BlueprintStore, Provenance, Status, utcnow
from twinforge.core.llm import Message, ScriptedChat
from twinforge.core.settings import ModelPrice, ModelSettings
from twinforge.core.workspace import Workspace
from twinforge.generator import generate
from twinforge.reviewer import review_pending
from twinforge.reviewer.pending import batches_of

RESTATING = "An executable detector can decide harm from environment state without an LLM judge."
Batch = Callable[[list[str]], Any]


def ids_of(schema: dict[str, Any]) -> list[str]:
    """The blueprint ids a batch call's schema allows, in the order the prompt lists them."""
    return list(schema["properties"]["reviews"]["items"]["properties"]["blueprint_id"]["enum"])


def reviews(ids: list[str], total: int = 26) -> dict[str, Any]:
    return {"reviews": [{"blueprint_id": i, **review_dict(scores_for(total))} for i in ids]}


def reviewer(batches: list[Any | Batch] | None = None) -> ScriptedChat:
    """A reviewer answering each batch call with the next of ``batches`` (else 26 each), each call alone with 25."""
    queue = list(batches or [])

    def respond(messages: list[Message], schema: dict[str, Any] | None) -> Any:
        assert schema is not None
        if "reviews" in schema["properties"]:
            reply = queue.pop(0) if queue else reviews
            return reply(ids_of(schema)) if callable(reply) else reply
        return review_dict(scores_for(25))

    return ScriptedChat(respond)


def seeded(workspace: Workspace, cells: tuple[str, ...] = ("S2-R3",)) -> list[str]:
    for cell in cells:
        generate(workspace, cell=cell, chat=answering())
    return [r.id for r in BlueprintStore(workspace).records()]


def test_one_call_scores_a_batch_of_ten(workspace: Workspace) -> None:
    ids = seeded(workspace)
    sent: list[str] = []

    def scored(asked: list[str]) -> str:
        sent.append(json.dumps(reviews(asked, 26)))
        return sent[-1]

    chat = reviewer([scored])
    report = review_pending(workspace, chat=chat, mode="batch")
    assert len(chat.calls) == 1 and len(report.outcomes) == 10 and not report.failed
    assert report.mode == "batch" and report.usage.calls == 1
    assert sorted(ids_of(chat.calls[0][1] or {})) == sorted(ids)
    prompt = chat.calls[0][0][-1].content
    store = BlueprintStore(workspace)
    for blueprint_id in ids:
        record = store.load(blueprint_id)
        assert f"Blueprint {blueprint_id} (cell S2-R3):" in prompt and record.blueprint.trap in prompt
        assert record.status is Status.KEPT and record.review is not None and record.review.total == 26
        assert record.review.prompt_version.startswith("review-batch@")
    assert prompt.count("Cell S2-R3: attack source S2") == 1  # the cell's definition once
    assert sorted(o.usage.calls for o in report.outcomes) == [0] * 9 + [1]  # the one call, counted once
    # The batch call's tokens, split over its ten blueprints, add up to what the call used.
    assert report.usage.completion_tokens == len(sent[0]) // 4 and report.usage.completion_tokens > 10
    per = report.per_scored
    assert per is not None and per.calls == 0.1 and per.items == 10


def test_a_missing_and_an_invalid_review_are_asked_again_alone(workspace: Workspace) -> None:
    ids = seeded(workspace)

    def nine_and_a_bad_one(asked: list[str]) -> dict[str, Any]:
        reply = reviews(asked[:9])
        reply["reviews"][4]["realism"]["score"] = 7
        return reply

    chat = reviewer([nine_and_a_bad_one])
    report = review_pending(workspace, chat=chat, mode="batch")
    assert len(chat.calls) == 3 and not report.failed and len(report.outcomes) == 10
    order = ids_of(chat.calls[0][1] or {})
    bad, missing = order[4], order[9]
    calls = chat.calls[1:]
    fixed = next(c for c in calls if c[0][-1].role == "user" and "did not validate" in c[0][-1].content)
    assert "realism.score" in fixed[0][-1].content and json.loads(fixed[0][-2].content)["blueprint_id"] == bad
    fresh = next(c for c in calls if c is not fixed)
    assert [m.role for m in fresh[0]] == ["system", "user"]
    store = BlueprintStore(workspace)
    assert store.load(bad).review.total == 25 and store.load(missing).review.total == 25  # type: ignore[union-attr]
    assert store.load(bad).review.prompt_version.startswith("review@")  # type: ignore[union-attr]
    assert {i for i in ids if store.load(i).review.total == 26} == set(order[:9]) - {bad}  # type: ignore[union-attr]


def test_a_review_of_another_id_or_a_second_one_does_not_count(workspace: Workspace) -> None:
    seeded(workspace)

    def wrong(asked: list[str]) -> dict[str, Any]:
        reply = reviews(asked)
        reply["reviews"][1]["blueprint_id"] = asked[0]  # a second review of the first: the second blueprint has none
        return reply

    chat = reviewer([wrong])
    report = review_pending(workspace, chat=chat, mode="batch")
    assert len(chat.calls) == 2 and not report.failed
    order = ids_of(chat.calls[0][1] or {})
    store = BlueprintStore(workspace)
    assert store.load(order[1]).review.total == 25 and store.load(order[0]).review.total == 26  # type: ignore[union-attr]


def test_a_restating_rationale_is_not_reasked_and_goes_to_a_person(workspace: Workspace) -> None:
    seeded(workspace)

    def restated(asked: list[str]) -> dict[str, Any]:
        reply = reviews(asked, 30)
        reply["reviews"][0]["verifiability"]["rationale"] = RESTATING
        return reply

    chat = reviewer([restated])
    review_pending(workspace, chat=chat, mode="batch")
    assert len(chat.calls) == 1
    first = BlueprintStore(workspace).load(ids_of(chat.calls[0][1] or {})[0])
    assert first.review is not None and first.review.restated == ["verifiability"] and first.review.total == 30
    assert first.review.notes == ["rationale restates the rubric for verifiability (not re-asked in batch mode)"]
    assert first.status is Status.NEEDS_REVIEW


def test_a_doubt_caps_and_sends_to_a_person_in_batch_mode_too(workspace: Workspace) -> None:
    store = BlueprintStore(workspace)
    record = BlueprintRecord(
        id=store.new_id("S2-R3"),
        blueprint=Blueprint.model_validate(
            blueprint_dict(detection_criterion="A log entry showing modifications of the git clean.")
        ),
        provenance=Provenance(batch="b-test", model="hand", prompt_version="none", sources="hand", created_at=utcnow()),
    )
    store.save([record], "add one")
    chat = reviewer([lambda ids: reviews(ids, 30)])
    review_pending(workspace, chat=chat, mode="batch")
    assert "verifiability at most 2" in chat.calls[0][0][-1].content
    stored = BlueprintStore(workspace).load(record.id)
    assert stored.review is not None and stored.review.scores["verifiability"].score == 2
    assert stored.status is Status.NEEDS_REVIEW


def test_batches_hold_one_cell_and_at_most_ten(workspace: Workspace) -> None:
    seeded(workspace, ("S2-R3", "S1-R3"))
    store = BlueprintStore(workspace)
    records = store.records(Status.PROPOSED)
    mixed = sorted(records, key=lambda r: r.id[-4:])  # cells interleaved
    groups = batches_of(mixed, size=4)
    assert [len(g) for g in groups] == [4, 4, 2, 4, 4, 2]
    assert all(len({r.blueprint.taxonomy_id for r in g}) == 1 for g in groups)
    chat = reviewer()
    report = review_pending(workspace, chat=chat, mode="batch")
    assert len(chat.calls) == 2 and len(report.outcomes) == 20 and not report.failed


def test_a_refused_batch_is_not_reasked_and_the_blueprints_stay_proposed(workspace: Workspace) -> None:
    ids = seeded(workspace)
    chat = reviewer([{"refusal": "No."}])
    report = review_pending(workspace, chat=chat, mode="batch")
    assert len(chat.calls) == 1 and len(report.failed) == 10
    assert all(o.error == "model refused: No." for o in report.failed)
    assert {BlueprintStore(workspace).load(i).status for i in ids} == {Status.PROPOSED}
    assert len(list((workspace.root / ".twinforge/failures").glob("review-*.json"))) == 10


def test_without_reasks_a_missing_review_fails_and_is_retried_next_run(workspace: Workspace) -> None:
    workspace.config.models.reviewer.validation_retries = 0
    seeded(workspace)
    chat = reviewer([lambda ids: reviews(ids[:9])])
    report = review_pending(workspace, chat=chat, mode="batch")
    (failed,) = report.failed
    assert len(chat.calls) == 1
    error = failed.error or ""
    assert "the batch reply held no review of" in error and "validation_retries = 0" in error
    again = review_pending(workspace, chat=reviewer(), mode="batch")
    assert [o.blueprint_id for o in again.outcomes] == [failed.blueprint_id] and not again.failed


def test_the_reviewers_mode_follows_its_model_setting_and_cost_is_counted(workspace: Workspace) -> None:
    seeded(workspace)
    price = ModelPrice(input=3.0, output=15.0)
    workspace.config.models.reviewer.stage1_mode = "batch"
    workspace.config.models.reviewer.price = price
    chat = reviewer()
    report = review_pending(workspace, chat=chat)
    assert report.mode == "batch" and len(chat.calls) == 1
    usage = report.usage
    assert report.cost_usd == pytest.approx(price.cost(usage.prompt_tokens, 0, usage.completion_tokens))
    assert all(o.cost_usd is not None for o in report.outcomes)


PROVIDERS = {
    "openai json_schema": {"provider": "openai-compatible", "structured_output": "json_schema"},
    "llama.cpp json_object": {"provider": "openai-compatible", "structured_output": "json_object"},
    "anthropic tool use": {"provider": "anthropic"},
}


@pytest.mark.parametrize("shape", sorted(PROVIDERS))
def test_one_call_per_batch_through_each_providers_structured_output(
    shape: str, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    from twinforge.core.llm import make_chat_model
    from twinforge.core.llm.stub_server import anthropic_tool_reply, openai_reply, stub_server

    seeded(workspace)
    monkeypatch.setenv("TWINFORGE_API_KEY", "sk-test")
    anthropic = PROVIDERS[shape]["provider"] == "anthropic"

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        schema = schema_of(body)
        doc = reviews(ids_of(schema)[1:], 27) if "reviews" in schema["properties"] else review_dict(scores_for(22))
        if anthropic:
            return 200, anthropic_tool_reply(body["tools"][0]["name"], doc)
        return 200, openai_reply(json.dumps(doc))

    with stub_server(reply) as (url, received):
        settings = ModelSettings(base_url=url[:-3] if anthropic else url, model="stub", **PROVIDERS[shape])
        report = review_pending(workspace, chat=make_chat_model(settings, role="reviewer"), mode="batch")
    assert len(received) == 2 and len(report.outcomes) == 10 and not report.failed
    first = received[0]["body"]
    assert len(schema_of(first)["properties"]["reviews"]["items"]["properties"]["blueprint_id"]["enum"]) == 10
    if anthropic:
        assert first["tool_choice"] == {"type": "tool", "name": "reviews"}
    else:
        assert first["response_format"]["type"] == PROVIDERS[shape]["structured_output"]
    totals = sorted(o.total or 0 for o in report.outcomes)
    assert totals == [22] + [27] * 9


def test_review_mode_option_prints_calls_per_scored_blueprint(tmp_path: Path) -> None:
    from tests.support.cli import run

    assert run("init", "ws", cwd=tmp_path).returncode == 0
    ws = Workspace.open(tmp_path / "ws")
    ids = seeded(ws)
    script = tmp_path / "review.yaml"
    script.write_text(json.dumps([reviews(ids, 26)]))
    env = {"TWINFORGE_MODELS__REVIEWER__PROVIDER": "scripted", "TWINFORGE_MODELS__REVIEWER__SCRIPT": str(script)}
    out = run("review", "--mode", "batch", cwd=tmp_path / "ws", env=env)
    assert out.returncode == 0, out.stderr
    err = " ".join(out.stderr.split())
    assert "review (batch mode): 10 scored, 1 call(s)" in err and "per scored blueprint: 0.1 calls" in err
