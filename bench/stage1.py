"""Stage I bench (docs/stage1.md).

(a) Against a stub OpenAI-compatible endpoint (its own process) that answers after a fixed 0.5 s,
    reviewing a batch of 10 blueprints should take at most 1.3x the time of one review call
    (bounded concurrency). Both are measured in this run, side by side, and their ratio printed.
(b) On the local model (default Qwen2.5-Coder-1.5B), the old embedded server (llama-cpp-python, one
    request at a time, roles at concurrency 1 as before) and the new one (llama.cpp's llama-server,
    roles at its slot count) side by side in the same run: one 10-slot batch (S2-R3, the generator
    role's settings as `twinforge init` writes them) and a review of the same ten blueprints; wall
    time, calls, prompt tokens taken from the prompt cache, the server's peak memory. Targets on
    2 cores for the new server: a batch <= 8 min, a review of 10 <= 4 min.

Usage: python bench/stage1.py [--skip-local] [--model qwen2.5-coder-1.5b] [--port 8092] [--servers old,new]
Every run also prints the peak resident memory of this process.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import shutil
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from model_servers import Running, available, start

from tests.support.samples import blueprint_dict, review_dict, scores_for
from twinforge.blueprints import BlueprintStore, load_dimensions
from twinforge.core.llm import ScriptedChat, make_chat_model
from twinforge.core.llm.stub_server import openai_reply, stub_server
from twinforge.core.localmodel import get_spec
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


def stage1_settings(base_url: str, concurrency: int) -> tuple[ModelSettings, ModelSettings]:
    """The generator and reviewer roles as ``twinforge init`` writes them, on ``base_url``."""
    generator = ModelSettings(
        base_url=base_url,
        structured_output="json_object",
        max_tokens=6000,
        temperature=0.8,
        timeout_s=1800,
        concurrency=concurrency,
    )
    reviewer = generator.model_copy(update={"max_tokens": 1200, "temperature": 0.2})
    return generator, reviewer


def bench_server(server: Running, seeded: Path) -> dict[str, Any]:
    """One 10-slot batch and a review of the seeded workspace's ten blueprints on ``server``."""
    generator, reviewer = stage1_settings(server.base_url, server.slots)
    out: dict[str, Any] = {"label": server.label}
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.init(Path(tmp) / "ws")
        ws.config.models.generator = generator
        started = time.perf_counter()
        report = generate(ws, cell="S2-R3", chat=make_chat_model(generator, role="generator"))
        out["batch_s"] = time.perf_counter() - started
        batch = report.batches[0]
        usage = batch.usage
        out.update(
            calls=usage.calls,
            stored=len(batch.stored),
            completion=usage.completion_tokens,
            prompt=usage.prompt_tokens,
            cached=usage.cached_tokens,
        )
        print(
            f"    batch: {usage.calls} calls, {len(batch.stored)} stored, {out['batch_s']:.0f} s wall, "
            f"{usage.completion_tokens} completion tokens, {usage.cached_tokens} of {usage.prompt_tokens} prompt "
            "tokens from the cache",
            flush=True,
        )
    with tempfile.TemporaryDirectory() as tmp:
        ws_root = Path(tmp) / "ws"
        shutil.copytree(seeded, ws_root, symlinks=True)
        ws = Workspace.open(ws_root)
        ws.config.models.reviewer = reviewer
        started = time.perf_counter()
        reviews = review_pending(ws, chat=make_chat_model(reviewer, role="reviewer"))
        out["review_s"] = time.perf_counter() - started
        done = [o for o in reviews.outcomes if o.total is not None]
        out.update(
            reviewed=len(done),
            review_prompt=sum(o.prompt_tokens for o in reviews.outcomes),
            review_cached=sum(o.cached_tokens for o in reviews.outcomes),
        )
        print(
            f"    review of 10: {len(done)} scored, {out['review_s']:.0f} s wall, {out['review_cached']} of "
            f"{out['review_prompt']} prompt tokens from the cache",
            flush=True,
        )
    out["rss_mb"] = server.peak_rss_mb()
    return out


def bench_local(model: str, port: int, which: list[str]) -> None:
    """(b): the Stage I steps on the old and the new embedded server, side by side."""
    spec = get_spec(model)
    print(f"(b) Stage I on the local model {model}: one 10-slot batch (S2-R3) and a review of ten blueprints")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        seeded = seeded_workspace(Path(tmp)).root
        for name in available(which):
            with start(name, spec, port) as server:
                print(f"  {server.label}", flush=True)
                results.append(bench_server(server, seeded))
    if not results:
        return
    base = results[0]
    print(f"\n{'server':34} {'batch s':>8} {'calls':>5} {'stored':>6} {'x':>5} {'review s':>8} {'x':>5} {'RSS MB':>7}")
    for r in results:
        print(
            f"{r['label']:34} {r['batch_s']:>8.0f} {r['calls']:>5} {r['stored']:>6} "
            f"{base['batch_s'] / r['batch_s']:>5.2f} {r['review_s']:>8.0f} {base['review_s'] / r['review_s']:>5.2f} "
            f"{r['rss_mb']:>7.0f}"
        )
    last = results[-1]
    print(
        f"  targets for the new server: batch <= 480 s ({'met' if last['batch_s'] <= 480 else 'MISSED'}), "
        f"review of 10 <= 240 s ({'met' if last['review_s'] <= 240 else 'MISSED'}); x = speed-up over the first row"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-local", action="store_true", help="only the stub part (a)")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--port", type=int, default=8092)
    parser.add_argument("--servers", default="old,new", help="old (llama-cpp-python), new (llama-server)")
    args = parser.parse_args()
    bench_concurrency()
    if not args.skip_local:
        bench_local(args.model, args.port, args.servers.split(","))
    print(f"peak resident memory of this process: {peak_rss_mb():.0f} MB (model server not counted)")


if __name__ == "__main__":
    main()
