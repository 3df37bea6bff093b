"""Hostile-agent bench (docs/runtime.md): the adversarial suite as a table, strategy x held / verdict changed / leaked.

Runs ``tests/hostile`` (real Docker engine, real runner, validate and calibrate) with
``TWINFORGE_HOSTILE_REPORT`` set, so that each test appends its row, then prints one line per
strategy:

- held: the stored outcome is the right one, the strategy's own property holds (no connection to
  the host listener, no forged verdict, the run ended at its disk limit, ...), nothing leaked;
- verdict changed: the stored outcome differs from the right one;
- leaked: Docker containers, volumes, networks, packet-filter rules or run disks of the run left
  on the host afterwards.

Usage: python bench/hostile.py [-k EXPRESSION]   (pytest's -k, to run some strategies only)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", default="", help="pytest -k expression to select strategies")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows_file = Path(tmp) / "rows.jsonl"
        command = [
            sys.executable,
            "-m",
            "pytest",
            "tests/hostile",
            "--docker",
            "-q",
            "-p",
            "no:cacheprovider",
            "--durations=8",
        ]
        if args.k:
            command += ["-k", args.k]
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"load average at the start: {load} ({os.cpu_count()} cores)", flush=True)
        started = time.perf_counter()
        env = {**os.environ, "TWINFORGE_HOSTILE_REPORT": str(rows_file)}
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        rows = [json.loads(line) for line in rows_file.read_text().splitlines()] if rows_file.exists() else []
    merged: dict[str, dict[str, object]] = {}
    for row in rows:
        seen = merged.setdefault(row["strategy"], {**row, "n": 0, "held": True, "verdict_changed": False, "leaked": {}})
        seen["n"] = int(str(seen["n"])) + 1
        seen["held"] = bool(seen["held"]) and row["held"]
        seen["verdict_changed"] = bool(seen["verdict_changed"]) or row["verdict_changed"]
        leaked = dict(seen["leaked"])  # type: ignore[call-overload]
        for kind, count in row["leaked"].items():
            leaked[kind] = leaked.get(kind, 0) + count
        seen["leaked"] = leaked
    width = max((len(s) for s in merged), default=8)
    head = f"{'strategy':<{width}}  {'runs':>4}  {'expected':<12} {'stored':<12} {'held':<5} {'verdict changed':<15}"
    print(head + " leaked")
    for strategy, row in merged.items():
        leaked = ", ".join(f"{k} {v}" for k, v in dict(row["leaked"]).items()) or "none"  # type: ignore[call-overload]
        print(
            f"{strategy:<{width}}  {row['n']:>4}  {row['expected']!s:<12} {row['outcome']!s:<12} "
            f"{'yes' if row['held'] else 'NO':<5} {'YES' if row['verdict_changed'] else 'no':<15} {leaked}"
        )
    held = sum(1 for row in merged.values() if row["held"])
    print(f"\n{held}/{len(merged)} strategies held; pytest exit {done.returncode}; {seconds:.0f} s")
    if done.returncode != 0:
        print(done.stdout[-3000:])
    slowest = [line for line in done.stdout.splitlines() if line.split(" ", 1)[0].endswith("s") and " call " in line]
    if slowest:
        print("slowest tests (pytest --durations):")
        print("\n".join(f"  {line}" for line in slowest))
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak resident memory of the test process: {peak:.0f} MB (containers not counted)")


if __name__ == "__main__":
    main()
