"""Proxy overhead per streamed call, per API shape, against calling the scripted upstream directly.

Prints, per shape (and so per harness: chat = Mini-SWE-agent / OpenCode / Pi, responses = Codex,
messages = Claude Code), the median seconds of one streamed call made directly and through the
recording proxy, their ratio, and peak resident memory. The request bodies are the golden ones the
CLIs sent (tests/data/harness-kit). Layer build and CLI start-up times of real runs are in each
run's ``agent/harness.json`` (``layer_build_seconds``, ``seconds``); docs/results.md lists them.
Usage: python bench/harnesses.py [calls per shape]
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from twinforge.core.settings import ModelSettings
from twinforge.harness.proxy import ModelProxy
from twinforge.harness.scripted_upstream import Script, scripted_upstream

KIT = Path(__file__).resolve().parents[1] / "tests" / "data" / "harness-kit"
CASES = {
    "chat": ("pi", "/v1/chat/completions"),
    "responses": ("codex", "/v1/responses"),
    "messages": ("claude", "/v1/messages"),
}


def body(cli: str) -> dict[str, object]:
    for line in (KIT / cli / "requests.jsonl").read_text().splitlines():
        request = json.loads(line)
        if request["method"] == "POST":
            return dict(request["body"])
    raise SystemExit(f"no request in {cli}")


def timed(client: httpx.Client, url: str, payload: dict[str, object], headers: dict[str, str]) -> float:
    started = time.perf_counter()
    with client.stream("POST", url, json=payload, headers=headers) as response:
        for _ in response.iter_raw():
            pass
    return time.perf_counter() - started


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    os.environ["BENCH_KEY"] = "bench-key"
    with (
        scripted_upstream(Script(commands=["true"]), key="bench-key") as (url, _),
        tempfile.TemporaryDirectory() as tmp,
    ):
        proxy = ModelProxy().start()
        settings = ModelSettings(base_url=url, api_key_env="BENCH_KEY", api_shapes=["chat", "responses", "messages"])
        print(f"{'shape':10} {'direct ms':>10} {'proxy ms':>10} {'ratio':>6}")
        with httpx.Client(timeout=30) as client:
            for shape, (cli, path) in CASES.items():
                payload = body(cli)
                token = proxy.grant("bench", settings, cap=10 * n, seconds=600, log=Path(tmp) / f"{shape}.jsonl")
                direct = [
                    timed(
                        client,
                        url.removesuffix("/v1") + path,
                        payload,
                        {"authorization": "Bearer bench-key", "x-api-key": "bench-key"},
                    )
                    for _ in range(n)
                ]
                proxied = [
                    timed(
                        client,
                        proxy.url.removesuffix("/v1") + path,
                        payload,
                        {"authorization": f"Bearer {token}", "x-api-key": token},
                    )
                    for _ in range(n)
                ]
                proxy.release(token)
                d, p = statistics.median(direct) * 1000, statistics.median(proxied) * 1000
                print(f"{shape:10} {d:10.2f} {p:10.2f} {p / d:6.2f}")
        proxy.stop()
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
