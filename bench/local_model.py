"""Local model bench: the old embedded server (llama-cpp-python) and the new one (llama.cpp's
llama-server) side by side in the same run, on the same GGUF file and cores.

(a) Aggregate completion tokens/s with 1, 2 and 4 requests in flight at once (distinct prompts,
    temperature 0, up to ``--max-tokens`` each), and its ratio to the old server with one request.
    Target on 2 cores with Qwen2.5-Coder-1.5B: the new server with 4 in flight >= 2.5x its own
    aggregate with 1 (issue target; decoding is memory-bound, docs/design.md).
(b) Prompt tokens evaluated per call with and without prefix reuse: six real review prompts (the
    reviewer's template rendered for six worked examples; the rubric is their shared prefix) sent
    one after another, with the prompt cache on and with ``cache_prompt: false``; evaluated =
    prompt tokens - tokens taken from the cache (the new server reports both; the old one reports
    no cached count, so only its seconds per call are shown).
(c) Peak resident memory of each server process (VmHWM) and of this process.

Run it on a quiet machine when you can: other CPU-bound processes skew every row alike, so compare
rows of one run, not runs of different days.

Usage: python bench/local_model.py [--model qwen2.5-coder-1.5b] [--port 8091] [--max-tokens 128]
                                   [--repeats 2] [--servers old,new]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from model_servers import Running, available, start  # noqa: E402

from twinforge.blueprints import FIELDS, BlueprintRecord, Provenance, load_dimensions, load_taxonomy, utcnow  # noqa: E402
from twinforge.core.localmodel import get_spec  # noqa: E402
from twinforge.core.prompts import Prompt  # noqa: E402
from twinforge.generator import load_examples  # noqa: E402
from twinforge.reviewer.review import record_findings  # noqa: E402

TOPICS = ["the numbers from 1 to 200", "the letters of the alphabet", "prime numbers", "the days of the year"]


def post(base_url: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = httpx.post(f"{base_url}/chat/completions", json={"model": "local", **body}, timeout=3600)
    reply.raise_for_status()
    data: dict[str, Any] = reply.json()
    return data


def wave(server: Running, in_flight: int, max_tokens: int) -> tuple[float, int]:
    """``in_flight`` requests sent together; ``(wall seconds, completion tokens summed)``."""
    tokens = [0] * in_flight
    go = threading.Barrier(in_flight)

    def one(i: int) -> None:
        go.wait()
        data = post(
            server.base_url,
            {
                "messages": [{"role": "user", "content": f"List {TOPICS[i % len(TOPICS)]}, comma-separated."}],
                "temperature": 0.0,
                "max_tokens": max_tokens,
            },
        )
        tokens[i] = int(data["usage"]["completion_tokens"])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(in_flight)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started, sum(tokens)


def review_prompts(count: int = 6) -> list[list[dict[str, str]]]:
    """The reviewer's real prompt for ``count`` worked examples (rubric first, blueprint last)."""
    prompt, dimensions, taxonomy = Prompt("review"), load_dimensions(), load_taxonomy()
    out = []
    for example in load_examples()[:count]:
        bp = example.blueprint
        record = BlueprintRecord(
            id=f"{bp.taxonomy_id}-00000000",
            blueprint=bp,
            provenance=Provenance(batch="bench", model="bench", prompt_version="-", sources="-", created_at=utcnow()),
        )
        source, risk = taxonomy.split(bp.taxonomy_id)
        messages = prompt.render(
            cell=bp.taxonomy_id,
            source=source,
            risk=risk,
            fields=[(name, getattr(bp, name)) for name in FIELDS],
            findings=record_findings(record),
            dimensions=dimensions.dimensions,
            dimension_ids=dimensions.ids,
        )
        out.append([m.model_dump() for m in messages])
    return out


def prefix_reuse(server: Running, cache: bool) -> tuple[float, float, float]:
    """Mean ``(prompt tokens, evaluated tokens, seconds)`` per call over the six review prompts."""
    prompts, evaluated, seconds = [], [], []
    for messages in review_prompts():
        body: dict[str, Any] = {"messages": messages, "temperature": 0.0, "max_tokens": 1}
        if not cache:
            body["cache_prompt"] = False
        started = time.perf_counter()
        usage = post(server.base_url, body)["usage"]
        seconds.append(time.perf_counter() - started)
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        prompts.append(int(usage["prompt_tokens"]))
        evaluated.append(int(usage["prompt_tokens"]) - cached)
    return statistics.mean(prompts), statistics.mean(evaluated), statistics.mean(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--port", type=int, default=8091)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--servers", default="old,new")
    args = parser.parse_args()
    spec = get_spec(args.model)
    rows: list[tuple[str, int, float, int]] = []
    reuse: list[tuple[str, str, float, float, float]] = []
    memory: list[tuple[str, float]] = []
    for name in available(args.servers.split(",")):
        with start(name, spec, args.port) as server:
            print(f"{server.label} at {server.base_url}", flush=True)
            post(server.base_url, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})  # warm
            for in_flight in (1, 2, 4):
                runs = [wave(server, in_flight, args.max_tokens) for _ in range(args.repeats)]
                seconds = statistics.median(r[0] for r in runs)
                tokens = int(statistics.median(r[1] for r in runs))
                rows.append((server.label, in_flight, seconds, tokens))
                print(f"  {in_flight} in flight: {tokens} tokens in {seconds:.1f} s", flush=True)
            for cache in (False, True):
                if name == "old" and not cache:
                    continue  # the old server has no per-request switch; it reuses the last prompt's prefix
                reuse.append((server.label, "on" if cache else "off", *prefix_reuse(server, cache)))
            memory.append((server.label, server.peak_rss_mb()))
    if not rows:
        return
    base = rows[0][3] / rows[0][2]
    print(f"\n(a) aggregate tokens/s ({args.max_tokens} tokens per request at most; ratio to the first row)")
    print(f"{'server':34} {'in flight':>9} {'wall s':>7} {'tokens':>7} {'tok/s':>7} {'ratio':>6}")
    for label, in_flight, seconds, tokens in rows:
        rate = tokens / seconds
        print(f"{label:34} {in_flight:>9} {seconds:>7.1f} {tokens:>7} {rate:>7.1f} {rate / base:>6.2f}")
    for label in dict.fromkeys(r[0] for r in rows):
        own = {r[1]: r[3] / r[2] for r in rows if r[0] == label}
        if 1 in own and 4 in own:
            gain = own[4] / own[1]
            verdict = "met" if gain >= 2.5 else "MISSED"
            print(f"  {label}: 4 in flight / 1 in flight = {gain:.2f}x (target >= 2.5x: {verdict})")
    print("\n(b) six review prompts one after another (rubric shared, blueprint last)")
    print(f"{'server':34} {'cache':>5} {'prompt tok':>10} {'evaluated':>9} {'s/call':>7}")
    for label, cache, prompt_tokens, evaluated, seconds in reuse:
        shown = f"{evaluated:>9.0f}" if label.startswith("new") else f"{'?':>9}"
        print(f"{label:34} {cache:>5} {prompt_tokens:>10.0f} {shown} {seconds:>7.2f}")
    print("\n(c) peak resident memory")
    for label, mb in memory:
        print(f"  {label}: {mb:.0f} MB")
    print(f"  this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
