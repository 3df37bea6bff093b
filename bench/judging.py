"""Judging bench (docs/runtime.md, "What the agent can and cannot influence"): the cost of judging from outside.

Each run plays one side of a reference pair with a short scripted agent through the real runner,
once on this checkout and once on a baseline checkout (``--baseline``, default the commit before
the judging redesign, made as a git worktree under /tmp), alternating so a noisy machine loads both
alike. Each run is its own child process (its peak resident memory is printed). From each run's
``result.json`` timings: set-up (now with one clean room per judgement point), the end's judgement
point (collection from the frozen container plus the detector with its probes in the clean room),
and the whole run. Printed: medians per pair and checkout, their difference and ratio. Target: at
most 2 s added per judgement point on these 2 cores.

Usage:
    python bench/judging.py [--runs 3] [--baseline 9890bd5] [--pairs ref-r8-skipped-tests:twin ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAIRS = ("ref-r8-skipped-tests:twin", "ref-r9-sql-injection:risk", "ref-r3-ignored-database:risk")
"""Oracle cases in the room, a probe in the room, no probe at all."""
COMMANDS = ["ls -la", "git status --short", "python3 -c 'print(1)'"]
CHILD = r"""
import json, resource, sys, tempfile
from pathlib import Path
from twinforge.taskpair.runtime.scripted import run_scripted
root, side, commands = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
with tempfile.TemporaryDirectory() as tmp:
    run = run_scripted(Path(root), side, commands, Path(tmp) / "runs")
    timings = json.loads((Path(run.evidence_dir) / "result.json").read_text()).get("timings", {})
print(json.dumps({"outcome": run.outcome.value, "timings": timings,
                  "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def checkout(rev: str) -> Path:
    """A worktree of ``rev`` under /tmp (made once)."""
    where = Path("/tmp") / f"twinforge-bench-{rev}"
    if not where.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), rev], check=True)
    return where


def one(tree: Path, pair: str, side: str) -> dict[str, object]:
    root = tree / "twinforge" / "guidelines" / "reference-pairs" / pair
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), side, json.dumps(COMMANDS)],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{tree} {pair} {side}: {done.stderr[-2000:]}")
    parsed: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return parsed


def median(rows: list[dict[str, object]], key: str) -> float:
    values = []
    for row in rows:
        timings = row["timings"]
        if not isinstance(timings, dict):
            continue
        if key == "judging":
            values.append(float(timings.get("collect", 0)) + float(timings.get("detector", 0)))
        else:
            values.append(float(timings.get(key, 0)))
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", default="9890bd5")
    parser.add_argument("--pairs", nargs="*", default=list(PAIRS))
    args = parser.parse_args()
    trees = {"baseline": checkout(args.baseline), "now": ROOT}
    print(f"{'pair:side':34} {'part':10} {'baseline s':>10} {'now s':>8} {'+s':>6} {'ratio':>6}")
    for item in args.pairs:
        pair, side = item.split(":")
        rows: dict[str, list[dict[str, object]]] = {"baseline": [], "now": []}
        for _ in range(args.runs):
            for name, tree in trees.items():
                rows[name].append(one(tree, pair, side))
        for part in ("setup", "judging", "total"):
            before, after = median(rows["baseline"], part), median(rows["now"], part)
            print(f"{item:34} {part:10} {before:10.2f} {after:8.2f} {after - before:+6.2f} {after / before:6.2f}")
        outcomes = {name: sorted({str(r["outcome"]) for r in rs}) for name, rs in rows.items()}
        rss = {name: max(float(str(r["rss_mib"])) for r in rs) for name, rs in rows.items()}
        print(f"{'':34} outcomes {outcomes}; peak RSS MiB baseline {rss['baseline']:.0f}, now {rss['now']:.0f}")


if __name__ == "__main__":
    main()
