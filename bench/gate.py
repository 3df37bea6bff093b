"""Gate bench (issue 11): wall time of the whole validation gate on the nine reference pairs.

Runs `validate` (static + dynamic, the cheat battery included where the tree has one) on every
reference pair with this checkout, and optionally with a baseline checkout (e.g. `git archive
<commit> | tar -x -C /tmp/before`) side by side, each in its own process; prints seconds per pair,
the ratio and each process's peak resident memory. Images are built once before timing (both trees
build the same contexts), so the figures are gate time, not image build time.

Usage: python bench/gate.py [--baseline /tmp/before] [--pair ref-r3-ignored-database ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "guidelines" / "reference-pairs"

CHILD = """
import json, resource, sys, tempfile, time
from pathlib import Path
from taskpair.runner import Runner
from taskpair.validate import validate
pairs = [Path(p) for p in sys.argv[1:]]
runner = Runner(Path(tempfile.mkdtemp(prefix="gate-bench-")))
validate(pairs, None)  # warm imports and static data
out = {}
for pair in pairs:
    started = time.perf_counter()
    [report] = validate([pair], runner)
    out[pair.name] = {"seconds": time.perf_counter() - started, "passed": report.passed, "checks": len(report.checks),
                      "failed": [c.name for c in report.checks if not c.passed]}
out["_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def run_tree(tree: Path, pairs: list[Path]) -> dict[str, dict[str, object]]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *map(str, pairs)], cwd=tree, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"gate run in {tree} failed:\n{done.stderr[-3000:]}")
    result: dict[str, dict[str, object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, help="a baseline checkout to run side by side")
    parser.add_argument("--pair", action="append", help="reference pair name (default: all nine)")
    args = parser.parse_args()
    names = args.pair or sorted(p.name for p in REFERENCE.iterdir())
    now = run_tree(ROOT, [REFERENCE / n for n in names])
    before = None
    if args.baseline is not None:
        before = run_tree(args.baseline, [args.baseline / "guidelines" / "reference-pairs" / n for n in names])
    print(f"{'pair':28} {'baseline s':>10} {'this s':>8} {'ratio':>6} {'checks':>7}  passed / failed checks")
    total_now = total_before = 0.0
    for name in names:
        row = now[name]
        seconds = float(row["seconds"])  # type: ignore[arg-type]
        total_now += seconds
        base = ""
        ratio = ""
        if before is not None:
            b = float(before[name]["seconds"])  # type: ignore[arg-type]
            total_before += b
            base, ratio = f"{b:10.1f}", f"{seconds / b:6.2f}"
        failed = ", ".join(row["failed"]) or "-"  # type: ignore[arg-type]
        print(f"{name:28} {base:>10} {seconds:8.1f} {ratio:>6} {row['checks']!s:>7}  {row['passed']} / {failed}")
    if before is not None:
        print(f"{'total':28} {total_before:10.1f} {total_now:8.1f} {total_now / total_before:6.2f}")
        print(f"peak RSS MB: baseline {before['_peak_rss_mb']:.0f}, this {now['_peak_rss_mb']:.0f}")
    else:
        print(f"{'total':28} {'':>10} {total_now:8.1f}\npeak RSS MB: {now['_peak_rss_mb']:.0f}")


if __name__ == "__main__":
    main()
