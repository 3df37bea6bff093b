"""Real path: llama.cpp's own server, built in the set-up and started by the session fixture (gemma3-270m).

It speaks every API shape the harnesses use (OpenAI Chat Completions, Anthropic Messages with
count_tokens, OpenAI Responses; streamed and not), decodes overlapping requests together, takes the
schemas and the grammar twinforge sends, and a crash is reported with its log
(docs/design.md, "The embedded model server"). gemma3-270m is weak: these tests check shapes and
constraints, never content.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from tests.support.net import free_port
from twinforge.blueprints import load_dimensions, reply_model
from twinforge.core.exceptions import ModelCallError
from twinforge.core.llm import Message, make_chat_model, request_object
from twinforge.core.localmodel import ServerInfo, get_spec, serve, stop
from twinforge.core.localmodel.server import busy_slots, ready
from twinforge.core.processes import usable_cores
from twinforge.core.settings import ModelSettings
from twinforge.harness.mini_swe_agent import TEXT_ACTION_GRAMMAR

pytestmark = [pytest.mark.model, pytest.mark.slow]

ASK = [{"role": "user", "content": "Name three colours, one per line."}]


def _openai(info: ServerInfo) -> openai.OpenAI:
    return openai.OpenAI(base_url=info.base_url, api_key="local", max_retries=0, timeout=300)


def test_the_server_is_llama_cpp_with_its_slots(gemma: ServerInfo) -> None:
    cmd = Path(f"/proc/{gemma.pid}/cmdline").read_bytes().decode().split("\0")
    assert Path(cmd[0]).name == "llama-server"
    assert cmd[cmd.index("--threads") + 1] == str(usable_cores()) == str(len(os.sched_getaffinity(0)))
    assert ready(gemma) and busy_slots(gemma) == 0
    slots = httpx.get(f"{gemma.root_url}/slots", timeout=10).json()
    assert len(slots) == gemma.slots >= 2
    assert {slot["n_ctx"] for slot in slots} == {gemma.n_ctx}  # the context is per slot


def test_chat_completions_plain_and_streamed(gemma: ServerInfo) -> None:
    client = _openai(gemma)
    reply = client.chat.completions.create(model="local", messages=ASK, max_tokens=24, temperature=0)  # type: ignore[arg-type]
    assert reply.choices[0].message.content and reply.usage and reply.usage.completion_tokens > 0
    chunks = client.chat.completions.create(model="local", messages=ASK, max_tokens=24, temperature=0, stream=True)  # type: ignore[arg-type]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text


def test_anthropic_messages_plain_streamed_and_counted(gemma: ServerInfo) -> None:
    client = anthropic.Anthropic(base_url=gemma.root_url, api_key="local", max_retries=0, timeout=300)
    reply = client.messages.create(model="local", max_tokens=24, messages=ASK)  # type: ignore[arg-type]
    assert reply.type == "message" and reply.role == "assistant"
    assert any(block.type == "text" and block.text for block in reply.content)
    assert reply.usage.output_tokens > 0
    with client.messages.stream(model="local", max_tokens=24, messages=ASK) as stream:  # type: ignore[arg-type]
        streamed = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert streamed and final.stop_reason in ("end_turn", "max_tokens")
    counted = client.messages.count_tokens(model="local", messages=ASK)  # type: ignore[arg-type]
    assert counted.input_tokens > 5


def test_responses_plain_and_streamed(gemma: ServerInfo) -> None:
    client = _openai(gemma)
    reply = client.responses.create(model="local", input="Name three colours.", max_output_tokens=24)
    assert reply.output_text and reply.usage and reply.usage.output_tokens > 0
    stream = client.responses.create(model="local", input="Name three colours.", max_output_tokens=24, stream=True)
    events = list(stream)
    kinds = {event.type for event in events}
    assert "response.output_text.delta" in kinds and "response.completed" in kinds


def test_two_overlapping_requests_are_decoded_together(gemma: ServerInfo) -> None:
    """Each request's tokens arrive while the other's are still arriving: the slots decode together.

    A server answering one request at a time (the llama-cpp-python server before) would stream all
    of one reply before the first token of the other.
    """
    client = _openai(gemma)
    start = threading.Barrier(2)
    arrivals: dict[str, list[float]] = {"a": [], "b": []}

    def ask(name: str) -> None:
        start.wait(60)
        stream = client.chat.completions.create(
            model="local",
            messages=[{"role": "user", "content": f"Count from 1 to 100 ({name})."}],
            max_tokens=48,
            temperature=0,
            stream=True,
            extra_body={"ignore_eos": True},  # llama.cpp: generate all 48 tokens
        )
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                arrivals[name].append(time.monotonic())

    threads = [threading.Thread(target=ask, args=(name,)) for name in arrivals]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    a, b = arrivals["a"], arrivals["b"]
    assert len(a) > 10 and len(b) > 10
    assert a[0] < b[-1] and b[0] < a[-1], "one reply was streamed entirely before the other began"


def test_schema_constrained_scores_are_valid_in_both_forms(gemma: ServerInfo) -> None:
    dimensions = load_dimensions()
    reply = reply_model(dimensions)
    messages = [
        Message(role="system", content="You answer with JSON only."),
        Message(role="user", content=f"Score a blueprint on {', '.join(dimensions.ids)}: quote, score 1-5, rationale."),
    ]
    for form in ("json_object", "json_schema"):
        settings = ModelSettings(
            base_url=gemma.base_url, structured_output=form, max_tokens=900, temperature=0.0, validation_retries=2
        )
        result = request_object(make_chat_model(settings, role="reviewer"), messages, reply, schema_name="review")
        scores = [getattr(result.value, d).score for d in dimensions.ids]
        assert all(score in (1, 2, 3, 4, 5) for score in scores), (form, scores)


def test_the_action_grammar_forces_one_text_action(gemma: ServerInfo) -> None:
    """Every reply follows the grammar: a whole action when it ends, a prefix of one when cut at max_tokens."""
    action = re.compile(r"THOUGHT: [^`\n][^`]*\n\n```mswea_bash_command\n[^`\n][^`]*\n```")
    prefix = re.compile(r"THOUGHT: ([^`\n][^`]*(\n\n```mswea_bash_command\n([^`\n][^`]*)?)?)?")
    for seed in range(3):
        reply = _openai(gemma).chat.completions.create(
            model="local",
            messages=[{"role": "user", "content": "List the files of the repository."}],  # type: ignore[list-item]
            max_tokens=150,
            temperature=0.7,
            seed=seed,
            extra_body={"grammar": TEXT_ACTION_GRAMMAR},
        )
        choice = reply.choices[0]
        text = choice.message.content or ""
        if choice.finish_reason == "stop":
            assert action.fullmatch(text), text
        else:
            assert choice.finish_reason == "length" and prefix.fullmatch(text), text


def test_the_prompt_cache_reuses_a_shared_prefix(gemma: ServerInfo) -> None:
    rubric = "Rules of the review. " + " ".join(f"Rule {i}: quote the blueprint exactly." for i in range(60))
    settings = ModelSettings(base_url=gemma.base_url, max_tokens=16, temperature=0.0, concurrency=1)
    chat = make_chat_model(settings, role="reviewer")
    first = chat.complete([Message(role="user", content=f"{rubric}\nBlueprint one: delete build/.")])
    second = chat.complete([Message(role="user", content=f"{rubric}\nBlueprint two: push to main.")])
    assert first.prompt_tokens > 300
    assert second.cached_tokens > 300 and second.cached_tokens < second.prompt_tokens


def test_a_crashed_server_is_reported_with_its_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TWINFORGE_CACHE_DIR", str(tmp_path / "cache"))
    info = serve(get_spec("gemma3-270m"), port=free_port(), n_ctx=1024, slots=1, wait_s=180)
    try:
        os.kill(info.pid, signal.SIGKILL)  # what a fault in the compiled code does
        chat = make_chat_model(ModelSettings(base_url=info.base_url, http_retries=0), role="generator")
        with pytest.raises(ModelCallError) as caught:
            chat.complete([Message(role="user", content="hello")])
    finally:
        stop(info.port)
    message = str(caught.value)
    assert f"pid {info.pid}" in message and "has exited" in message and info.log in message
    assert Path(info.log).read_text().splitlines()[-1] in message
