"""Viewer bench: the overview and a filtered run list over 100,000 run records (docs/viewer.md, "Scale").

Target on this machine (2 cores): each loads in <= 1 s. The records are generated into a real
SQLite records database (calibration's schema, WAL mode): 212 pairs x 2 sides x k = 4 for
calibration and 58 evaluated model x harness combinations, about 1 in 40 runs UNDETERMINED and
1 in 50 with a disagreement flag. Requests go over HTTP to the viewer served by uvicorn on a
loopback port, as a browser's would.

Each figure is printed beside a baseline measured in the same run: the overview's tables computed
the way ``twinforge report`` loads its input (``RecordsDB.runs()``, every column of every row),
and a filtered list taken from that full load in Python. Cold is the first request (the overview
is cached until the records change), warm the median of the next five.

Usage: python bench/viewer.py [--runs 100000]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import socket
import statistics
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import uvicorn
from sqlalchemy import insert

from twinforge.blueprints import load_taxonomy
from twinforge.core.workspace import Workspace
from twinforge.evaluation.report import sections
from twinforge.runs.records import RecordsDB, RunRow, records_url
from twinforge.runs.results import Budgets, Disagreement, RunDetail
from twinforge.viewer import Site, build_app

OUTCOMES = ["COMPROMISED", "COMPLETED", "INCOMPLETE", "STOPPED", "COMPLETED", "COMPLETED", "INCOMPLETE"]
BUDGETS = Budgets(model_calls=40, task_model_calls=40, turn_timeout_s=900, command_timeout_s=30)


def generate(ws: Workspace, n: int) -> RecordsDB:
    """``n`` finished run records in the workspace's records database."""
    records = RecordsDB(records_url(ws))
    rng = random.Random(7)
    cells = load_taxonomy().cells()
    pairs = [(f"pair-{i:03d}", cells[i % len(cells)]) for i in range(212)]
    combos = [("calibration", "openai-compatible:qwen3.5-4b", "mini-swe-agent[toolcall]")]
    combos += [("evaluation", f"provider:model-{m}", f"harness-{h}") for m in range(12) for h in range(5)][:58]
    plain = RunDetail(budgets=BUDGETS).model_dump(mode="json")
    flagged = RunDetail(
        budgets=BUDGETS, disagreements=[Disagreement(kind="touched-no-harm", detail="rm -rf data/")]
    ).model_dump(mode="json")
    start = datetime(2026, 11, 1, tzinfo=UTC)
    rows = []
    i = 0
    while len(rows) < n:
        purpose, model, harness = combos[(i // (len(pairs) * 8)) % len(combos)]
        pair, cell = pairs[(i // 8) % len(pairs)]
        side, k = ("risk", "twin")[i % 2], (i // 2) % 4 + 1
        source, risk = cell.split("-")
        undetermined = rng.random() < 0.025
        rows.append(
            {
                "purpose": purpose,
                "pair": pair,
                "digest": "d" * 64,
                "side": side,
                "model": model,
                "harness": harness,
                "budgets": BUDGETS.key(),
                "k": k,
                "risk": risk,
                "source": source,
                "status": "done",
                "attempts": 1 + i // (len(pairs) * 8 * len(combos)),  # keeps the run key unique past one cycle
                "run_id": f"{pair}-{side}-k{k}-{i:06x}",
                "outcome": "UNDETERMINED"
                if undetermined
                else rng.choice(OUTCOMES[:1] if side == "risk" and rng.random() < 0.5 else OUTCOMES),
                "calls": rng.randint(3, 40),
                "prompt_tokens": rng.randint(10_000, 200_000),
                "completion_tokens": rng.randint(500, 8_000),
                "seconds": rng.uniform(30, 900),
                "error": "detector: exited 1" if undetermined else None,
                "detail": flagged if rng.random() < 0.02 else plain,
                "started_at": start + timedelta(seconds=i),
                "finished_at": start + timedelta(seconds=i + 60),
            }
        )
        i += 1
    with records.engine.begin() as connection:
        for chunk in range(0, len(rows), 5000):
            connection.execute(insert(RunRow), rows[chunk : chunk + 5000])
    return records


def generate_more(ws: Workspace) -> None:
    """One more finished run, as a live calibration adds them."""
    records = RecordsDB(records_url(ws))
    with records.engine.begin() as connection:
        connection.execute(
            insert(RunRow),
            [
                {
                    "purpose": "evaluation",
                    "pair": "pair-new",
                    "side": "risk",
                    "model": "m",
                    "harness": "h",
                    "k": 1,
                    "risk": "R1",
                    "source": "S1",
                    "status": "done",
                    "run_id": "pair-new-risk-k1-000000",
                    "outcome": "COMPROMISED",
                    "finished_at": datetime.now(UTC),
                }
            ],
        )
    records.engine.dispose()


def _serve(site: Site) -> tuple[str, uvicorn.Server, threading.Thread]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(build_app(site), log_level="warning", access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server, thread


def _timed(client: httpx.Client, url: str) -> tuple[float, int]:
    began = time.perf_counter()
    response = client.get(url)
    response.raise_for_status()
    return time.perf_counter() - began, len(response.content)


def _cpu(client: httpx.Client, url: str) -> float:
    """Process CPU seconds of one request (server and client share the process): a figure that
    other jobs on the machine do not inflate the way they inflate wall time."""
    began = time.process_time()
    client.get(url).raise_for_status()
    return time.process_time() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.init(Path(tmp) / "ws")
        began = time.perf_counter()
        records = generate(ws, args.runs)
        print(f"generated {args.runs:,} run records in {time.perf_counter() - began:.1f} s")
        records.engine.dispose()

        site = Site(ws)
        began, began_cpu = time.perf_counter(), time.process_time()
        site.overview()  # what `twinforge view` does before it serves
        start_up, start_up_cpu = time.perf_counter() - began, time.process_time() - began_cpu
        base, server, thread = _serve(site)
        query = "/runs?outcome=COMPROMISED&model=provider%3Amodel-3&page=3"
        try:
            with httpx.Client(base_url=base, timeout=300) as client:
                figures = {}
                for name, url in (("overview", "/"), ("filtered run list", query), ("run list API", "/api" + query)):
                    cold, size = _timed(client, url)
                    warm = statistics.median(_timed(client, url)[0] for _ in range(5))
                    cpu = statistics.median(_cpu(client, url) for _ in range(5))
                    figures[name] = (cold, warm, cpu, size)
                generate_more(ws)
                stale, _ = _timed(client, "/")  # served while the new tables are computed
                site.settle()
                refreshed, _ = _timed(client, "/")
        finally:
            server.should_exit = True
            thread.join(timeout=30)
        viewer_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        # baseline: the report's way of loading its input, and a list filtered from that load
        began, began_cpu = time.perf_counter(), time.process_time()
        rows = RecordsDB(records_url(ws)).runs(status="done")
        sections(rows)
        base_overview, base_overview_cpu = time.perf_counter() - began, time.process_time() - began_cpu
        began = time.perf_counter()
        rows = RecordsDB(records_url(ws)).runs(status="done")
        listed = [r for r in rows if r.outcome == "COMPROMISED" and r.model == "provider:model-3"][:50]
        base_list = time.perf_counter() - began
        del rows, listed

    head = ("cold s", "warm s", "warm cpu s", "baseline s", "baseline/cold", "page KiB")
    print(f"{'':22} " + " ".join(f"{h:>{max(8, len(h))}}" for h in head))
    baselines = {"overview": base_overview, "filtered run list": base_list, "run list API": base_list}
    for name, (cold, warm, cpu, size) in figures.items():
        baseline = baselines[name]
        ratio = f"{baseline / cold:.1f}x"
        print(f"{name:22} {cold:8.3f} {warm:8.3f} {cpu:10.3f} {baseline:10.3f} {ratio:>13} {size / 1024:8.1f}")
    ratio = base_overview / start_up
    print(f"overview computed at start-up: {start_up:.3f} s (baseline {base_overview:.3f} s, {ratio:.1f}x)")
    cpu_ratio = base_overview_cpu / start_up_cpu
    print(f"  in CPU seconds: {start_up_cpu:.3f} (baseline {base_overview_cpu:.3f}, {cpu_ratio:.1f}x)")
    print(
        f"overview after the records changed: {stale:.3f} s (stale tables, refreshed in the background), "
        f"then {refreshed:.3f} s"
    )
    print(f"load average during the run: {' '.join(f'{v:.1f}' for v in os.getloadavg())} (2 cores)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"peak RSS {viewer_peak:.0f} MiB with the viewer (and the generator's rows), {peak:.0f} MiB after the baseline"
    )
    target = all(cold <= 1.0 for name, (cold, _, _, _) in figures.items() if name != "run list API")
    print(f"target (overview and filtered list <= 1 s each, cold): {'met' if target else 'MISSED'}")


if __name__ == "__main__":
    main()
