"""Gate bench (docs/task-pairs.md): wall time of the whole validation gate on every reference pair.

Runs `validate` on every reference pair, each configuration in its own process, side by side:
the baseline checkout (optional; e.g. `git archive <commit> | tar -x -C /tmp/before`), this
checkout without the cheat battery, and this checkout with it. Prints seconds per pair, the ratios
to the baseline and each process's peak resident memory. Images are built before timing (all
trees build the same contexts), so the figures are gate time, not image build time.

Usage: python bench/gate.py [--baseline /tmp/before] [--pair ref-r3-ignored-database ...] [--workers 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "twinforge" / "guidelines" / "reference-pairs"

CHILD = """
import inspect, json, resource, sys, tempfile, time
from pathlib import Path
from twinforge.taskpair.runtime.runner import Runner
from twinforge.taskpair.gate.validate import validate
mode, workers, pairs = sys.argv[1], int(sys.argv[2]), [Path(p) for p in sys.argv[3:]]
from docker.errors import NotFound
for attempt in range(10):  # an older runner's start-up reaping races other users' containers going away
    try:
        runner = Runner(Path(tempfile.mkdtemp(prefix="gate-bench-")))
        break
    except NotFound:
        time.sleep(1)
options = {}
if "battery" in inspect.signature(validate).parameters:
    options = {"battery": mode == "battery", "workers": workers}
validate(pairs, None)  # warm imports and static data
out = {}
for pair in pairs:
    started = time.perf_counter()
    [report] = validate([pair], runner, **options)
    out[pair.name] = {"seconds": time.perf_counter() - started, "passed": report.passed,
                      "failed": [c.name for c in report.checks if not c.passed]}
out["_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def run_tree(tree: Path, pairs: list[Path], mode: str, workers: int) -> dict[str, dict[str, object]]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(workers), *map(str, pairs)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"gate run in {tree} failed:\n{done.stderr[-3000:]}")
    result: dict[str, dict[str, object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, help="a baseline checkout to run side by side")
    parser.add_argument("--pair", action="append", help="reference pair name (default: all of them)")
    parser.add_argument("--workers", type=int, default=3, help="runs at a time (this checkout)")
    args = parser.parse_args()
    names = args.pair or sorted(p.name for p in REFERENCE.iterdir())
    columns: dict[str, dict[str, dict[str, object]]] = {}
    if args.baseline is not None:
        base_pairs = [args.baseline / "guidelines" / "reference-pairs" / n for n in names]
        columns["baseline"] = run_tree(args.baseline, base_pairs, "oracles", 1)
    columns["no battery"] = run_tree(ROOT, [REFERENCE / n for n in names], "oracles", args.workers)
    columns["with battery"] = run_tree(ROOT, [REFERENCE / n for n in names], "battery", args.workers)
    heads = list(columns)
    print(f"{'pair':26}" + "".join(f"{h + ' s':>16}" for h in heads) + "   failed checks (with battery)")
    totals = dict.fromkeys(heads, 0.0)
    for name in names:
        cells = ""
        for head in heads:
            seconds = float(columns[head][name]["seconds"])  # type: ignore[arg-type]
            totals[head] += seconds
            cells += f"{seconds:16.1f}"
        failed = ", ".join(columns["with battery"][name]["failed"]) or "-"  # type: ignore[arg-type]
        print(f"{name:26}{cells}   {failed}")
    print(f"{'total':26}" + "".join(f"{totals[h]:16.1f}" for h in heads))
    if "baseline" in totals:
        print(f"{'ratio to baseline':26}" + "".join(f"{totals[h] / totals['baseline']:16.2f}" for h in heads))
    print(f"{'peak RSS MB':26}" + "".join(f"{float(columns[h]['_peak_rss_mb']):16.0f}" for h in heads))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
