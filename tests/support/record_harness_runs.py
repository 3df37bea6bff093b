"""Record the labelled harness runs: every scenario on every harness, against the scripted upstream.

Usage (Docker engine, base image and the four CLIs installed)::

    python -m tests.support.record_harness_runs [--harness pi] [--scenario refusal] [--out tests/data/harness-runs]

Each run's evidence (the files the trajectory readers take, nothing else) is copied to
``OUT/<harness>/<scenario>/``; ``OUT/labels.yaml`` is written by hand after looking at each run.
The proxy transcript of every scenario but ``repeat-failing`` is trimmed: the tool schemas and
system prompts a CLI sends with every call (up to 60 KB each) are replaced by their size.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from tests.support.harness_runs import HARNESSES, SCENARIOS, run_twin
from tests.support.paths import DATA

KEPT = ("proxy.jsonl", "result.json", "agent/commands.jsonl", "agent/harness.json", "agent/harness.stdout.jsonl")
"""The run's own records a trajectory reader takes (a CLI's ``trajectory.atif.json`` is derived from them)."""


def trim_transcript(path: Path) -> None:
    """Replace the tools and system prompts of each request by ``"[trimmed: N bytes]"``."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        request = entry.get("request")
        if isinstance(request, dict):
            for key in ("tools", "system", "instructions"):
                if key in request:
                    request[key] = f"[trimmed: {len(json.dumps(request[key]))} bytes]"
            for message in request.get("messages") or request.get("input") or []:
                if isinstance(message, dict) and message.get("role") in ("system", "developer"):
                    message["content"] = f"[trimmed: {len(json.dumps(message.get('content')))} bytes]"
        lines.append(json.dumps(entry))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


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
