"""Calibration bench (docs/calibration.md).

(a) Runs per hour with 1 vs N parallel scripted runs (a stub model in its own process answering
    Mini-SWE-agent actions; each run does real Docker work), and the parallel efficiency.
(b) Latency the model proxy adds per call: the same stub called directly and through the proxy,
    side by side. Target: <= 5 ms median.
(c) Metrics (CAP, ASR@1..4, per category / source / model) over 100,000 synthetic run records.
    Target: <= 1 s.
(d) With ``--local``: three reference pairs calibrated K = 1 at their own call cap (40) with the local
    model (default Qwen2.5-Coder-1.5B, the embedded preset: text actions, the action grammar), on
    the old embedded server (llama-cpp-python, one request at a time, one worker as before) and the
    new one (llama.cpp's llama-server, as many workers as slots: 4) side by side in the same run;
    wall time, model calls, outcomes, the server's peak memory.
Also the peak resident memory of this process while calibrating N runs in parallel (target < 1 GiB;
containers and the model server not counted).

Pairs are copied into the bench workspace's tasks/ and their gate result is recorded (the lifecycle
calibrate requires, docs/calibration.md), without running the gate itself.

Usage: python bench/calibrate.py [--parallel 4] [--calls 200] [--local] [--model qwen2.5-coder-1.5b]
                                 [--servers old,new] [--port 8093] [--skip-stub]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
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

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from model_servers import available, start

from twinforge.calibration.calibrate import calibrate
from twinforge.core.llm.stub_server import openai_reply, stub_server
from twinforge.core.localmodel import get_spec
from twinforge.core.settings import ModelSettings
from twinforge.core.workspace import Workspace
from twinforge.harness.proxy import ModelProxy
from twinforge.runs.metrics import PairRuns, breakdown, compute
from twinforge.runs.records import RecordsDB, records_url
from twinforge.runs.rules import outcome

ROOT = Path(__file__).resolve().parents[1]


from twinforge.taskpair import load_pair  # noqa: E402
from twinforge.taskpair.gate.recording import record_validation  # noqa: E402
from twinforge.taskpair.gate.report import CheckResult, PairReport  # noqa: E402

REFERENCE = ROOT / "twinforge" / "guidelines" / "reference-pairs"
R3 = REFERENCE / "ref-r3-ignored-database"
LOCAL_PAIRS = ("ref-r2-env-example", "ref-r3-ignored-database", "ref-r7-no-verify")
STEPS = ["ls -la", "sleep 2", "rm -f build/app.o", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]


def answer(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    command = STEPS[min(turn, len(STEPS) - 1)]
    return 200, openai_reply(f"THOUGHT: step.\n\n```mswea_bash_command\n{command}\n```")


def serve(urls: Any) -> None:
    with stub_server(answer) as (url, _):
        urls.put(url)
        threading.Event().wait()


@contextmanager
def stub_process() -> Iterator[str]:
    urls: Any = multiprocessing.Queue()
    process = multiprocessing.Process(target=serve, args=(urls,), daemon=True)
    process.start()
    try:
        yield urls.get(timeout=30)
    finally:
        process.terminate()
        process.join()


def run_batch(url: str, pairs: int, workers: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.init(Path(tmp) / "ws")
        dirs = []
        for i in range(pairs):
            target = ws.tasks_dir / f"bench-{i}"
            shutil.copytree(R3, target)
            (target / "pair.yaml").write_text((target / "pair.yaml").read_text().replace(R3.name, f"bench-{i}"))
            pair = load_pair(target)
            gate = PairReport(pair.id, str(target), [CheckResult("recorded for the bench", True)])
            record_validation(ws, pair, gate, by="bench")
            dirs.append(target)
        ws.config.models.calibration.base_url = url
        ws.config.calibration.grammar = False
        started = time.perf_counter()
        report = calibrate(ws, dirs, runs=1, workers=workers)
        elapsed = time.perf_counter() - started
        assert report.ran == 2 * pairs and not report.errors, report.errors
        return elapsed


def recorded_pairs(ws: Workspace, names: tuple[str, ...]) -> list[Path]:
    """Copy reference pairs into ``ws`` and record their gate result (the gate itself is not run)."""
    dirs = []
    for name in names:
        target = ws.tasks_dir / name
        shutil.copytree(REFERENCE / name, target)
        pair = load_pair(target)
        record_validation(
            ws, pair, PairReport(pair.id, str(target), [CheckResult("recorded for the bench", True)]), by="bench"
        )
        dirs.append(target)
    return dirs


def bench_local(model: str, port: int, which: list[str]) -> None:
    """(d): three pairs, K = 1, the tasks' own call cap, on the old and the new embedded server."""
    spec = get_spec(model)
    print(f"(d) {len(LOCAL_PAIRS)} reference pairs, K = 1, the tasks' own call cap, local model {model}")
    rows = []
    for name in available(which):
        with start(name, spec, port) as server, tempfile.TemporaryDirectory() as tmp:
            ws = Workspace.init(Path(tmp) / "ws", port=port, local_model=model)
            dirs = recorded_pairs(ws, LOCAL_PAIRS)
            workers = 1 if name == "old" else server.slots  # each server's default
            print(f"  {server.label}, {workers} worker(s)", flush=True)
            started = time.perf_counter()
            report = calibrate(ws, dirs, runs=1, workers=workers)
            wall = time.perf_counter() - started
            runs = RecordsDB(records_url(ws)).runs()
            outcomes = ", ".join(f"{r.pair.removeprefix('ref-')}/{r.side} {r.outcome}" for r in runs)
            calls = sum(r.calls for r in runs)
            print(f"    {wall / 60:.1f} min, {len(runs)} runs, {calls} model calls: {outcomes}", flush=True)
            if report.errors:
                print(f"    errors: {report.errors}")
            rows.append((server.label, workers, wall, len(runs), calls, server.peak_rss_mb()))
    if not rows:
        return
    base = rows[0][2]
    print(f"\n{'server':34} {'workers':>7} {'min':>6} {'runs':>4} {'calls':>5} {'s/call':>6} {'x':>5} {'RSS MB':>7}")
    for label, workers, wall, n, calls, rss in rows:
        print(
            f"{label:34} {workers:>7} {wall / 60:>6.1f} {n:>4} {calls:>5} {wall / max(calls, 1):>6.1f} "
            f"{base / wall:>5.2f} {rss:>7.0f}"
        )


def proxy_latency(url: str, calls: int) -> tuple[float, float]:
    proxy = ModelProxy().start()
    token = proxy.grant("bench", ModelSettings(base_url=url, model="m"), cap=10 * calls, seconds=3600)
    body = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
    direct, proxied = [], []
    with httpx.Client(timeout=10) as client:
        for _ in range(calls):  # interleaved, so machine noise hits both alike
            started = time.perf_counter()
            client.post(f"{url}/chat/completions", json=body).raise_for_status()
            direct.append(time.perf_counter() - started)
            started = time.perf_counter()
            client.post(
                f"{proxy.url}/chat/completions", json=body, headers={"authorization": f"Bearer {token}"}
            ).raise_for_status()
            proxied.append(time.perf_counter() - started)
    proxy.stop()
    return statistics.median(direct) * 1000, statistics.median(proxied) * 1000


def group(rows: list[tuple[str, str, str, str, str, str, int, str]]) -> list[PairRuns]:
    """Per-pair runs from ``(pair, risk, source, model, harness, side, k, outcome)`` rows."""
    found: dict[tuple[str, str, str], PairRuns] = {}
    for pair, risk, source, model, harness, side, k, value in rows:
        item = found.setdefault(
            (pair, model, harness),
            PairRuns(pair=pair, risk_category=risk, source=source, model=model, harness=harness),
        )
        (item.risk if side == "risk" else item.twin)[k] = outcome(value)
    return list(found.values())


def synthetic_rows(n_records: int, k: int = 4) -> list[tuple[str, str, str, str, str, str, int, str]]:
    rng = random.Random(7)
    rows = []
    per_pair = 2 * k
    for i in range(n_records // per_pair):
        risk, source = f"R{1 + i % 9}", "S1" if i % 2 else "S2"
        model = f"model-{i % 11}"
        for j in range(1, k + 1):
            rows.append(
                (
                    f"p{i}",
                    risk,
                    source,
                    model,
                    "mini-swe-agent",
                    "risk",
                    j,
                    rng.choice(["COMPROMISED", "COMPLETED", "INCOMPLETE"]),
                )
            )
            rows.append(
                (
                    f"p{i}",
                    risk,
                    source,
                    model,
                    "mini-swe-agent",
                    "twin",
                    j,
                    "COMPLETED" if rng.random() < 0.9 else "INCOMPLETE",
                )
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--local", action="store_true", help="also (d): real calibration on the local model")
    parser.add_argument("--skip-stub", action="store_true", help="only (d)")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--servers", default="old,new", help="old (llama-cpp-python), new (llama-server)")
    parser.add_argument("--port", type=int, default=8093)
    args = parser.parse_args()
    os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
    if args.local:
        bench_local(args.model, args.port, args.servers.split(","))
    if args.skip_stub:
        return
    with stub_process() as url:
        n = args.parallel
        serial = run_batch(url, n // 2 or 1, workers=1)  # n runs (pairs x 2 sides)
        parallel = run_batch(url, n // 2 or 1, workers=n)
        runs = 2 * (n // 2 or 1)
        rate1, rate_n = runs / serial * 3600, runs / parallel * 3600
        print(f"(a) {runs} scripted runs (4 model calls, one `sleep 2` each) on real Docker:")
        print(f"    1 worker   {serial:6.1f} s  -> {rate1:7.0f} runs/hour")
        print(
            f"    {n} workers  {parallel:6.1f} s  -> {rate_n:7.0f} runs/hour   "
            f"speed-up {rate_n / rate1:.2f}x, parallel efficiency {rate_n / rate1 / n:.0%} ({os.cpu_count()} cores)"
        )
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"    peak resident memory of this process so far: {peak:.0f} MB "
            f"(target < 1024 MB while calibrating {n} in parallel: {'met' if peak < 1024 else 'MISSED'})"
        )
        direct, proxied = proxy_latency(url, args.calls)
        added = proxied - direct
        print(
            f"(b) {args.calls} calls, median: direct {direct:.2f} ms, through the proxy {proxied:.2f} ms, "
            f"added {added:.2f} ms (target <= 5 ms: {'met' if added <= 5 else 'MISSED'})"
        )
    rows = synthetic_rows(100_000)
    started = time.perf_counter()
    pairs = group(rows)
    pooled = compute(pairs, 4)
    breakdown(pairs, 4, lambda p: p.risk_category)
    breakdown(pairs, 4, lambda p: p.source)
    breakdown(pairs, 4, lambda p: p.model)
    seconds = time.perf_counter() - started
    print(
        f"(c) metrics over {len(rows)} run records ({len(pairs)} pairs): {seconds:.3f} s "
        f"(target <= 1 s: {'met' if seconds <= 1 else 'MISSED'}); pooled CAP {pooled.cap:.3f}, "
        f"ASR@1..4 {json.dumps([round(a, 3) for a in pooled.asr])}"
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak:.0f} MB")


if __name__ == "__main__":
    main()
