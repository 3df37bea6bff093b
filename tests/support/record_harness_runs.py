"""Record the labelled harness runs: every scenario on every harness, against the scripted upstream.

Usage (Docker engine, base image and the four CLIs installed)::

    python -m tests.support.record_harness_runs [--harness pi] [--scenario refusal] [--out tests/data/harness-runs]

Each run's evidence (the files the trajectory readers take, nothing else) is copied to
``OUT/<harness>/<scenario>/``; ``OUT/labels.yaml`` is written by hand after looking at each run.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from tests.support.harness_runs import HARNESSES, SCENARIOS, run_twin
from tests.support.paths import DATA

KEPT = ("proxy.jsonl", "result.json", "agent/commands.jsonl", "agent/harness.json", "agent/harness.stdout.jsonl")
"""The run's own records a trajectory reader takes (a CLI's ``trajectory.atif.json`` is derived from them)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--harness", action="append", choices=HARNESSES)
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    parser.add_argument("--out", type=Path, default=DATA / "harness-runs")
    args = parser.parse_args()
    for harness in args.harness or HARNESSES:
        for name in args.scenario or SCENARIOS:
            with tempfile.TemporaryDirectory() as tmp:
                evidence = run_twin(harness, SCENARIOS[name], Path(tmp), f"{harness}-{name}")
                target = args.out / harness / name
                shutil.rmtree(target, ignore_errors=True)
                own = ("trajectory.json",) if harness == "mini-swe-agent" else ()  # Mini-SWE-agent's own file
                for kept in (*KEPT, *own):
                    source = evidence / kept
                    if source.is_file():
                        (target / kept).parent.mkdir(parents=True, exist_ok=True)
                        shutil.copyfile(source, target / kept)
                print(
                    f"{harness} {name}: {sorted(str(p.relative_to(target)) for p in target.rglob('*') if p.is_file())}"
                )


if __name__ == "__main__":
    main()
