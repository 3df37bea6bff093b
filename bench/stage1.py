"""Stage I bench (docs/stage1.md).

(a) Against a stub OpenAI-compatible endpoint (its own process) that answers after a fixed 0.5 s,
    reviewing a batch of 10 blueprints should take at most 1.3x the time of one review call
    (bounded concurrency). Both are measured in this run, side by side, and their ratio printed.
(b) On the local model (llama.cpp, default Qwen2.5-Coder-1.5B), one generation batch: tokens/s and
    seconds per blueprint; then one review: seconds and tokens/s.

Usage: python bench/stage1.py [--skip-local] [--model qwen2.5-coder-1.5b] [--port 8080]
Every run also prints the peak resident memory of this process.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: bench/ shares tests/support's fakes

from tests.support.samples import blueprint_dict, review_dict, scores_for
from twinforge.blueprints import BlueprintStore, load_dimensions
from twinforge.core.llm import ScriptedChat, make_chat_model
from twinforge.core.llm.stub_server import openai_reply, stub_server
from twinforge.core.localmodel import get_spec, serve
from twinforge.core.settings import ModelSettings
from twinforge.core.workspace import Workspace
from twinforge.generator import generate
from twinforge.reviewer import review_pending, score_blueprint

STUB_DELAY_S = 0.5


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def seeded_workspace(root: Path) -> Workspace:
    ws = Workspace.init(root / "ws")

    def respond(messages: Any, schema: dict[str, Any] | None) -> dict[str, Any]:
        assert schema is not None  # one call per slot; its schema names the slot's incident
        return blueprint_dict(cell="S2-R3", ref=schema["properties"]["source_reference"]["enum"][0])

    generate(ws, cell="S2-R3", chat=ScriptedChat(respond))
    return ws


def answer(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return 200, openai_reply(json.dumps(review_dict(scores_for(22))))


def serve_stub(urls: Any) -> None:
    with stub_server(answer, delay_s=STUB_DELAY_S) as (url, _):
        urls.put(url)
        threading.Event().wait()


@contextmanager
def stub_process() -> Iterator[str]:
    """The stub endpoint in its own process, like a real model server (it does not share our GIL)."""
    urls: Any = multiprocessing.Queue()
    process = multiprocessing.Process(target=serve_stub, args=(urls,), daemon=True)
    process.start()
    try:
        yield urls.get(timeout=30)
    finally:
        process.terminate()
        process.join()


def bench_concurrency(repeats: int = 5) -> float:
    singles, batches = [], []
    with stub_process() as url:
        settings = ModelSettings(base_url=url, structured_output="json_object", concurrency=10)
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as tmp:
                ws = seeded_workspace(Path(tmp))
                ws.config.models.reviewer = settings
                chat = make_chat_model(settings, role="reviewer")
                store = BlueprintStore(ws)
                one = store.records()[0]
                started = time.perf_counter()
                score_blueprint(chat, one, store, load_dimensions(), ws.config.triage)
                singles.append(time.perf_counter() - started)
                started = time.perf_counter()
                report = review_pending(ws, chat=chat)
                batches.append(time.perf_counter() - started)
                assert len(report.outcomes) == 10 and not report.failed
    single, batch = statistics.median(singles), statistics.median(batches)
    ratio = batch / single
    print("(a) review concurrency against a stub answering after 0.5 s")
    print(f"    one review call (baseline)   median {single:.3f} s   runs {[round(x, 3) for x in singles]}")
    print(f"    batch of 10, concurrency 10   median {batch:.3f} s   runs {[round(x, 3) for x in batches]}")
    print(f"    ratio batch/single            {ratio:.2f}x   (target <= 1.30x: {'met' if ratio <= 1.3 else 'MISSED'})")
    return ratio


def bench_local(model: str, port: int) -> None:
    info = serve(get_spec(model), port=port)
    print(f"(b) local model {model} at {info.base_url}")
    settings = ModelSettings(
        base_url=info.base_url,
        structured_output="json_object",
        max_tokens=6000,
        temperature=0.8,
        timeout_s=1800,
        validation_retries=0,
    )
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.init(Path(tmp) / "ws", port=port)
        chat = make_chat_model(settings, role="generator")
        started = time.perf_counter()
        report = generate(ws, cell="S2-R3", chat=chat)
        wall = time.perf_counter() - started
        batch = report.batches[0]
        stored = max(len(batch.stored), 1)
        print(
            f"    generation: {batch.calls} calls (one per slot), {batch.completion_tokens} completion tokens "
            f"in {batch.seconds:.1f} s "
            f"-> {batch.completion_tokens / batch.seconds:.1f} tokens/s"
        )
        print(
            f"    {len(batch.stored)} valid of 10 on the first attempt ({len(batch.flagged)} near-duplicate), "
            f"{wall / 10:.1f} s per requested blueprint, {wall / stored:.1f} s per stored blueprint"
        )
        if not batch.stored:
            return
        review_settings = settings.model_copy(update={"max_tokens": 1200, "temperature": 0.2})
        rchat = make_chat_model(review_settings, role="reviewer")
        store = BlueprintStore(ws)
        record = store.records()[0]
        started = time.perf_counter()
        review, seconds, tokens = score_blueprint(rchat, record, store, load_dimensions(), ws.config.triage)
        print(
            f"    review: {time.perf_counter() - started:.1f} s, {tokens} tokens -> {tokens / seconds:.1f} tokens/s, "
            f"total {review.total}/30 -> {review.triage.value}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-local", action="store_true", help="only the stub part (a)")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args()
    bench_concurrency()
    if not args.skip_local:
        bench_local(args.model, args.port)
    print(f"peak resident memory of this process: {peak_rss_mb():.0f} MB (model server not counted)")


if __name__ == "__main__":
    main()
