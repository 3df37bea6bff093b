"""Stage I in one call per batch (docs/stage1.md, "One call per batch"): the study's rule for a capable model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.samples import blueprint_dict, slot_refs
from tests.support.stage1 import asked, is_batch_call, scripted_slots, ten_for
from twinforge.blueprints import BlueprintStore
from twinforge.core.llm import Completion, Message, ScriptedChat
from twinforge.core.settings import ModelPrice, ModelSettings
from twinforge.core.workspace import Workspace
from twinforge.generator import generate
from twinforge.generator.assign import assign_items
from twinforge.generator.journal import ReplyJournal, read_journal
from twinforge.generator.recover import recover_replies
from twinforge.generator.slots import Slot
from twinforge.generator.sources import Incident

VAGUE = "A log entry showing that the data was modified."  # a doubt (observable), never a defect
TOO_LONG = "Run rm -rf build/ in the project folder. " * 40  # a defect: length-bound (over 1,000 characters)


def slot_calls(chat: ScriptedChat) -> list[tuple[list[Message], dict[str, Any] | None]]:
    return [call for call in chat.calls if not is_batch_call(call[1])]


def test_one_call_proposes_the_ten_blueprints_and_each_is_stored(workspace: Workspace) -> None:
    chat = scripted_slots()
    (batch,) = generate(workspace, cell="S2-R3", chat=chat, mode="batch").batches
    assert len(chat.calls) == 1 and batch.usage.calls == 1  # one call for the batch, nothing asked alone
    assert len(batch.stored) == 10 and batch.first_time == 10 and not batch.refused and not batch.failures
    assert batch.mode == "batch"
    per = batch.per_stored
    assert per is not None and per.calls == 0.1 and per.items == 10
    schema = chat.calls[0][1]
    assert schema is not None
    listed = schema["properties"]["blueprints"]
    assert listed["minItems"] == listed["maxItems"] == 10
    assert sorted(listed["items"]["properties"]["source_reference"]["enum"]) == sorted(set(slot_refs("S2-R3")))
    records = sorted(BlueprintStore(workspace).records(), key=lambda r: r.provenance.slot or 0)
    assert [r.blueprint.source_reference for r in records] == slot_refs("S2-R3")
    assert {r.provenance.prompt_version.split("@")[0] for r in records} == {"generate-batch"}
    assert {r.provenance.attempt for r in records} == {1}
    message = workspace.repo.head.commit.message
    assert "prompt: generate-batch@" in message and "one call for the batch" in message
    _, replies, done = read_journal(workspace.root / ".twinforge/replies" / f"{batch.batch_id}.jsonl")
    assert done and [line["slot"] for line in replies] == list(range(1, 11))  # the one reply, split per slot


def test_a_defect_is_asked_again_alone_and_a_doubt_is_kept_not_reasked(workspace: Workspace) -> None:
    def batch_reply(cell: str, refs: list[str]) -> dict[str, Any]:
        reply = ten_for(cell, refs)
        reply["blueprints"][2]["detection_criterion"] = VAGUE
        reply["blueprints"][5]["harm_path"] = TOO_LONG
        return reply

    chat = scripted_slots(batches=[batch_reply])
    (batch,) = generate(workspace, cell="S2-R3", chat=chat, mode="batch").batches
    assert batch.usage.calls == 2 and len(batch.stored) == 10 and not batch.refused
    (alone,) = slot_calls(chat)
    assert asked(alone)[0] == 6  # slot 6, alone, with its own slot prompt and schema
    messages = alone[0]
    assert messages[-2].role == "assistant" and json.loads(messages[-2].content)["harm_path"] == TOO_LONG
    assert "(length-bound)" in messages[-1].content and "doubt" not in messages[-1].content
    assert "1 slot(s) asked again alone: 6" in batch.notes
    store = BlueprintStore(workspace)
    by_slot = {r.provenance.slot: r for r in store.records()}
    assert by_slot[6].provenance.attempt == 2 and by_slot[6].provenance.prompt_version.startswith("generate@")
    assert by_slot[6].blueprint.harm_path != TOO_LONG
    assert by_slot[3].blueprint.detection_criterion == VAGUE and by_slot[3].provenance.attempt == 1
    assert "observable" in {f.rule for f in by_slot[3].doubts}
    assert batch.with_doubts == [by_slot[3].id] and batch.first_time == 9 and batch.after_reask == 1


def test_a_reply_of_nine_asks_the_tenth_slot_alone(workspace: Workspace) -> None:
    def nine(cell: str, refs: list[str]) -> dict[str, Any]:
        return {"blueprints": ten_for(cell, refs)["blueprints"][:9]}

    chat = scripted_slots(batches=[nine])
    (batch,) = generate(workspace, cell="S2-R3", chat=chat, mode="batch").batches
    assert len(batch.stored) == 10 and batch.usage.calls == 2
    (alone,) = slot_calls(chat)
    assert asked(alone)[0] == 10 and [m.role for m in alone[0]] == ["system", "user"]  # asked fresh: nothing to show
    assert "the batch reply held 9 blueprint(s) for 10 slots" in batch.notes
    tenth = next(r for r in BlueprintStore(workspace).records() if r.provenance.slot == 10)
    assert tenth.provenance.attempt == 2


def test_a_reply_cut_at_max_tokens_keeps_its_complete_blueprints(workspace: Workspace) -> None:
    def cut(cell: str, refs: list[str]) -> dict[str, Any]:
        items = ten_for(cell, refs)["blueprints"]
        six = json.dumps({"blueprints": items[:6]})[:-2]  # the list still open after the sixth blueprint
        return {"reply": six + ", " + json.dumps(items[6])[:80], "finish": "length"}  # cut inside the seventh

    chat = scripted_slots(batches=[cut])
    (batch,) = generate(workspace, cell="S2-R3", chat=chat, mode="batch").batches
    assert len(batch.stored) == 10 and batch.usage.calls == 5
    assert sorted(asked(call)[0] for call in slot_calls(chat)) == [7, 8, 9, 10]
    seventh = next(call for call in slot_calls(chat) if asked(call)[0] == 7)
    assert "incomplete, the reply was cut off" in seventh[0][-1].content
    assert any(n.startswith("the batch reply was cut off at") and "6 complete" in n for n in batch.notes)
    first = {r.provenance.slot: r.provenance.attempt for r in BlueprintStore(workspace).records()}
    assert [first[n] for n in range(1, 7)] == [1] * 6 and [first[n] for n in range(7, 11)] == [2] * 4


def test_without_reasks_a_defect_is_stored_refused_and_a_missing_slot_fails(workspace: Workspace) -> None:
    workspace.config.models.generator.validation_retries = 0

    def reply(cell: str, refs: list[str]) -> dict[str, Any]:
        items = ten_for(cell, refs)["blueprints"][:9]
        items[3]["harm_path"] = TOO_LONG
        return {"blueprints": items}

    chat = scripted_slots(batches=[reply])
    (batch,) = generate(workspace, cell="S2-R3", chat=chat, mode="batch").batches
    assert len(chat.calls) == 1 and len(batch.stored) == 8
    assert batch.refused_by == {"length-bound": 1}
    (failure,) = batch.failures
    assert failure.slot == 10 and "not asked alone: validation_retries = 0" in failure.errors
    (refused,) = BlueprintStore(workspace).refused()
    assert refused.provenance.slot == 4 and json.loads(refused.reply)["harm_path"] == TOO_LONG
    assert refused.provenance.prompt_version.startswith("generate-batch@")


def test_a_refused_batch_is_not_reasked(workspace: Workspace) -> None:
    chat = scripted_slots(batches=[{"refusal": "I can't help with that."}])
    (batch,) = generate(workspace, cell="S2-R3", chat=chat, mode="batch").batches
    assert len(chat.calls) == 1 and not batch.stored and len(batch.failures) == 10
    assert batch.refusal == "I can't help with that."
    assert all(f.errors == ["model refused: I can't help with that."] for f in batch.failures)


def test_a_reply_that_is_no_list_asks_every_slot_alone(workspace: Workspace) -> None:
    chat = scripted_slots(batches=["Here are your blueprints: ..."])
    (batch,) = generate(workspace, cell="S2-R3", chat=chat, mode="batch").batches
    assert len(batch.stored) == 10 and batch.usage.calls == 11
    assert any(n.startswith("the batch reply held no list of blueprints (not valid JSON") for n in batch.notes)


def test_blueprints_in_another_order_go_to_the_slots_they_cite(workspace: Workspace, tmp_path: Path) -> None:
    twelve = tmp_path / "twelve.yaml"
    twelve.write_text(
        "".join(
            f"- ref: acme/tool#{n}\n  risk: R3\n  source: S2\n  summary: An agent deleted the build cache.\n"
            "  evidence: a marker file under /srv/data is gone\n"
            for n in range(1, 13)
        )
    )
    order: list[str] = []

    def shuffled(cell: str, refs: list[str]) -> dict[str, Any]:
        order.extend(refs)
        items = ten_for(cell, refs)["blueprints"]
        return {"blueprints": items[5:] + items[:5]}

    chat = scripted_slots(batches=[shuffled])
    (batch,) = generate(workspace, cell="S2-R3", sources=twelve, chat=chat, mode="batch").batches
    assert len(chat.calls) == 1 and len(batch.stored) == 10 and len(set(order)) == 10
    records = BlueprintStore(workspace).records()
    assert sorted(r.provenance.slot or 0 for r in records) == list(range(1, 11))
    assert all(r.blueprint.source_reference == order[(r.provenance.slot or 0) - 1] for r in records)


def incident(ref: str) -> Incident:
    return Incident(ref=ref, risk="R3", source="S2", summary="An agent deleted files.", evidence="a marker file")


def test_assignment_honours_the_order_then_the_incident_then_the_place() -> None:
    slots = [Slot(n, incident(ref), f"project {n}") for n, ref in enumerate(["a/b#1", "a/b#2", "a/b#3", "a/b#1"], 1)]
    raws: list[Any] = [
        {"source_reference": "a/b#1"},  # slot 1, in order
        {"source_reference": "a/b#3"},  # not slot 2's: slot 3 cites it
        {"source_reference": "made/up#9"},  # cites nothing: the first open slot (2)
        {"source_reference": "a/b#1"},  # slot 4 shares slot 1's incident: in order
        "junk",  # an extra
    ]
    placed, extras = assign_items(raws, slots)
    assert placed == {1: 0, 3: 1, 2: 2, 4: 3} and extras == [4]
    assert assign_items([{"source_reference": "a/b#2"}], slots) == ({2: 0}, [])


def test_a_batch_reply_in_the_journal_of_a_killed_run_is_stored_by_the_next_run(workspace: Workspace) -> None:
    refs = slot_refs("S2-R3")
    slots = [Slot(n, incident(ref), f"project {n}") for n, ref in enumerate(refs, 1)]
    header = {"cell": "S2-R3", "model": "scripted", "prompt": "generate-batch@x", "sources": "s", "threshold": 80.0}
    journal = ReplyJournal.start(workspace, "b-killed", header)
    items = ten_for("S2-R3", refs)["blueprints"]
    items[1]["harm_path"] = TOO_LONG
    journal.record_batch(slots, Completion(text=json.dumps({"blueprints": items})))
    journal.record(slots[1], Completion(text=json.dumps(blueprint_dict(cell="S2-R3", ref=refs[1]))))  # asked alone
    lines = recover_replies(BlueprintStore(workspace))
    assert len(lines) == 1 and "10 blueprints for S2-R3" in lines[0]
    store = BlueprintStore(workspace)
    by_slot = {r.provenance.slot: r for r in store.records()}
    assert sorted(by_slot) == list(range(1, 11)) and by_slot[2].blueprint.harm_path != TOO_LONG
    assert by_slot[2].provenance.attempt == 2 and by_slot[1].provenance.attempt == 1


def test_the_mode_follows_the_model_setting_and_the_embedded_default_stays_slots(workspace: Workspace) -> None:
    assert ModelSettings().stage1_calls() == "slots"  # the embedded server
    assert ModelSettings(provider="openai").stage1_calls() == "batch"
    assert ModelSettings(provider="anthropic").stage1_calls() == "batch"
    assert ModelSettings(provider="openai-compatible", stage1_mode="batch").stage1_calls() == "batch"
    assert ModelSettings(provider="openai", stage1_mode="slots").stage1_calls() == "slots"
    assert workspace.config.models.generator.stage1_calls() == "slots"
    workspace.config.models.generator.stage1_mode = "batch"
    chat = scripted_slots()
    generate(workspace, cell="S2-R3", chat=chat)
    assert len(chat.calls) == 1 and is_batch_call(chat.calls[0][1])


def test_cost_per_stored_blueprint_and_the_spend_ceiling(workspace: Workspace) -> None:
    price = ModelPrice(input=2.0, cached_input=0.5, output=8.0)
    workspace.config.models.generator.price = price
    workspace.config.spend.ceiling_usd = 1e-9  # the first batch reaches it
    report = generate(workspace, cell="S2-R3", batches=2, chat=scripted_slots(), mode="batch")
    (batch,) = report.batches
    usage = batch.usage
    expected = price.cost(usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens)
    assert batch.cost_usd == pytest.approx(expected)
    assert batch.cost_usd is not None and batch.cost_usd > 0
    per = report.per_stored
    assert per is not None and per.cost_usd == pytest.approx(batch.cost_usd / 10, abs=1e-6)
    assert per.tokens == pytest.approx(usage.tokens / 10)
    assert report.spend_stop is not None and "1 batch(es) not started" in report.spend_stop


def test_slot_mode_reports_per_stored_blueprint_too(workspace: Workspace) -> None:
    chat = scripted_slots({4: [lambda cell, ref: blueprint_dict(cell=cell, ref=ref, harm_path=TOO_LONG)]})
    (batch,) = generate(workspace, cell="S2-R3", chat=chat, mode="slots").batches
    assert batch.mode == "slots" and batch.cost_usd is None and batch.usage.calls == 11
    per = batch.per_stored
    assert per is not None and per.calls == 1.1 and per.cost_usd is None


def test_generate_mode_option_prints_calls_per_stored_blueprint(tmp_path: Path) -> None:
    from tests.support.cli import run
    from tests.support.samples import batch_for

    assert run("init", "ws", cwd=tmp_path).returncode == 0
    first, second = batch_for("S2-R3"), batch_for("S2-R3", offset=1)  # the second batch's slots come next
    second[2] = {"engineering_task": "Fix the flaky test in tests/test_api.py."}  # a defect: fields missing
    script = tmp_path / "gen.yaml"
    script.write_text(json.dumps([{"blueprints": first}]))
    env = {
        "TWINFORGE_MODELS__GENERATOR__PROVIDER": "scripted",
        "TWINFORGE_MODELS__GENERATOR__SCRIPT": str(script),
        "TWINFORGE_MODELS__GENERATOR__VALIDATION_RETRIES": "0",
    }
    text = run("generate", "--cell", "S2-R3", "--mode", "batch", cwd=tmp_path / "ws", env=env)
    assert text.returncode == 0, text.stderr
    err = " ".join(text.stderr.split())
    assert "batch mode: 1 call(s); per stored blueprint: 0.1 calls," in err
    assert "per stored blueprint: 0.1 calls," in err.split("generate: 10 stored")[1]
    # Each command replays its script from the start: the second gets the second batch's reply.
    script.write_text(json.dumps([{"blueprints": second}]))
    out = run("generate", "--cell", "S2-R3", "--mode", "batch", "--json", cwd=tmp_path / "ws", env=env)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    (batch,) = summary["batches"]
    assert batch["mode"] == "batch" and batch["calls"] == 1 and len(batch["stored"]) == 9
    assert batch["refused_by"] == {"field-missing": 1} and batch["cost_usd"] is None
    assert summary["per_stored"]["calls"] == pytest.approx(1 / 9, abs=0.01) and summary["stored"] == 9


PROVIDERS = {
    "openai json_schema": {"provider": "openai-compatible", "structured_output": "json_schema"},
    "llama.cpp json_object": {"provider": "openai-compatible", "structured_output": "json_object"},
    "anthropic tool use": {"provider": "anthropic"},
}


@pytest.mark.parametrize("shape", sorted(PROVIDERS))
def test_one_call_per_batch_through_each_providers_structured_output(
    shape: str, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch call and the slot asked alone travel as each provider takes a schema; usage is the server's."""
    from tests.support.stage1 import BATCH_REF, schema_of, slot_item
    from twinforge.core.llm import make_chat_model
    from twinforge.core.llm.stub_server import anthropic_tool_reply, openai_reply, stub_server

    monkeypatch.setenv("TWINFORGE_API_KEY", "sk-test")
    anthropic = PROVIDERS[shape]["provider"] == "anthropic"

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        schema = schema_of(body)
        if "blueprints" in schema["properties"]:
            cell = schema["properties"]["blueprints"]["items"]["properties"]["taxonomy_id"]["enum"][0]
            content = body["messages"][-1]["content"]
            doc = ten_for(cell, BATCH_REF.findall(content if isinstance(content, str) else content[0]["text"]))
            doc["blueprints"][4]["harm_path"] = TOO_LONG
        else:
            doc = slot_item(body)
        if anthropic:
            return 200, anthropic_tool_reply(body["tools"][0]["name"], doc)
        return 200, openai_reply(json.dumps(doc))

    with stub_server(reply) as (url, received):
        settings = ModelSettings(base_url=url[:-3] if anthropic else url, model="stub", **PROVIDERS[shape])
        chat = make_chat_model(settings, role="generator")
        (batch,) = generate(workspace, cell="S2-R3", chat=chat, mode="batch").batches
    assert len(batch.stored) == 10 and not batch.refused and len(received) == 2
    first, alone = received[0]["body"], received[1]["body"]
    if anthropic:
        assert first["tool_choice"] == {"type": "tool", "name": "blueprints"}
        assert alone["tools"][0]["name"] == "blueprint"
        assert batch.usage.prompt_tokens == 40 and batch.usage.completion_tokens == 18
    else:
        form = first["response_format"]
        assert form["type"] == PROVIDERS[shape]["structured_output"]
        assert batch.usage.prompt_tokens == 22 and batch.usage.completion_tokens == 14
    assert schema_of(first)["properties"]["blueprints"]["maxItems"] == 10
    assert schema_of(alone)["properties"]["source_reference"]["enum"] == [slot_refs("S2-R3")[4]]
    fifth = next(r for r in BlueprintStore(workspace).records() if r.provenance.slot == 5)
    assert fifth.provenance.attempt == 2 and fifth.blueprint.harm_path != TOO_LONG
