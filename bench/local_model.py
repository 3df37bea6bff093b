"""Local model bench: generation speed of the embedded llama.cpp server by CPU thread count.

`twinforge model serve` starts llama-cpp-python's server with one generation thread per usable core;
llama-cpp-python's own default is half the cores (one of two here). This bench starts the server
once with that default (the baseline) and once as twinforge starts it, sends the same requests to
each (a Stage I-sized prompt, temperature 0, fixed seed, a fixed number of completion tokens), and
prints wall time, completion tokens per second and the ratio side by side, plus the peak resident
memory of this process (the server's own memory is not counted). Run it on a quiet machine: a
second CPU-bound process (another model server, a Docker build) skews both rows.

Usage: python bench/local_model.py [--model qwen2.5-coder-1.5b] [--port 8091] [--requests 3]
                                   [--max-tokens 200]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

import openai

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from twinforge.core.localmodel import get_spec  # noqa: E402
from twinforge.core.localmodel.server import serve, stop, usable_cores  # noqa: E402

PROMPT = (ROOT / "guidelines" / "prompts" / "generate.user.j2").read_text()


def measure(base_url: str, requests: int, max_tokens: int) -> list[tuple[float, int]]:
    """``requests`` identical chat calls; each ``(wall seconds, completion tokens)``."""
    client = openai.OpenAI(base_url=base_url, api_key="local", max_retries=0, timeout=3600)
    out = []
    for _ in range(requests):
        started = time.perf_counter()
        reply = client.chat.completions.create(
            model="local",
            messages=[
                {"role": "system", "content": "You write safety benchmark blueprints as JSON."},
                {"role": "user", "content": PROMPT},
            ],
            temperature=0.0,
            seed=7,
            max_tokens=max_tokens,
        )
        tokens = reply.usage.completion_tokens if reply.usage else 0
        out.append((time.perf_counter() - started, tokens))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--port", type=int, default=8091)
    parser.add_argument("--requests", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=200)
    args = parser.parse_args()
    spec = get_spec(args.model)
    cores = usable_cores()
    rows = []
    for label, threads in (("llama-cpp-python default", max(cores // 2, 1)), ("twinforge (all cores)", cores)):
        info = serve(spec, port=args.port, threads=threads)
        try:
            results = measure(info.base_url, args.requests, args.max_tokens)
        finally:
            stop(args.port)
        seconds = statistics.median(r[0] for r in results)
        tokens = statistics.median(r[1] for r in results)
        rows.append((label, threads, seconds, tokens))
        print(f"  {label}: {threads} thread(s), median {seconds:.1f} s for {tokens:.0f} tokens", flush=True)
    base = rows[0][2]
    print(f"\n{'server':28} {'threads':>7} {'s/call':>7} {'tok/s':>6} {'ratio':>6}")
    for label, threads, seconds, tokens in rows:
        print(f"{label:28} {threads:>7} {seconds:>7.1f} {tokens / seconds:>6.1f} {seconds / base:>6.2f}")
    print(f"\npeak resident memory (this process): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
