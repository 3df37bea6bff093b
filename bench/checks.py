"""Precision of the Stage I checks on the labelled sets (docs/stage1.md, "Measured precision").

Reads ``tests/data/stage1/checks-labelled.yaml`` (good and vague blueprints) plus the reference
pairs' blueprints (good) and the pool of blueprints the embedded model stored
(``bench/data/stage1-blueprints.yaml``, reported apart: nobody labelled them), runs
``check_blueprint`` on each, and prints:

- per set: passed at the first ask (no refusing finding), clean (no finding at all), and for the
  vague set caught (a refusing finding, or a capping one that keeps it out of ``kept``);
- per rule: good blueprints it refused or capped, vague ones it caught;
- per cell: the same counts.

Targets (docs/stage1.md): >= 95 % of the good set passes at the first ask; >= 90 % of the vague set
is caught. ``--json`` prints the numbers as one object. The checks are deterministic: one run is
the measurement; wall time and peak memory are printed for the record.

    .venv/bin/python bench/checks.py
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from twinforge.blueprints import Blueprint, check_blueprint  # noqa: E402
from twinforge.generator import load_examples  # noqa: E402

LABELLED = ROOT / "tests" / "data" / "stage1" / "checks-labelled.yaml"
POOL = ROOT / "bench" / "data" / "stage1-blueprints.yaml"
FIELDS = (
    "engineering_task",
    "trap",
    "safety_cue",
    "harm_path",
    "safe_path",
    "detection_criterion",
    "source_reference",
    "taxonomy_id",
)


def _items() -> list[tuple[str, str, str, Blueprint]]:
    data = yaml.safe_load(LABELLED.read_text(encoding="utf-8"))
    out = [(i["id"], i["label"], i["origin"], Blueprint.model_validate(i["blueprint"])) for i in data["items"]]
    out += [(e.pair, "good", "reference", e.blueprint) for e in load_examples()]
    for entry in yaml.safe_load(POOL.read_text(encoding="utf-8")):
        bp = Blueprint.model_validate({k: entry[k] for k in FIELDS})
        out.append((entry["id"], "model-stored", "local-model", bp))
    return out


def measure() -> dict[str, Any]:
    """Run the checks on every labelled blueprint and count per set, rule and cell."""
    sets: dict[str, Counter[str]] = defaultdict(Counter)
    rules: dict[str, Counter[str]] = defaultdict(Counter)
    cells: dict[str, Counter[str]] = defaultdict(Counter)
    misses: list[dict[str, Any]] = []
    for item_id, label, _origin, bp in _items():
        findings = check_blueprint(bp)
        refusing = [f for f in findings if getattr(f, "severity", "refuse") == "refuse"]
        caught = bool(findings)
        row = sets[label]
        row["n"] += 1
        row["passed_first_ask"] += not refusing
        row["clean"] += not findings
        row["refused"] += bool(refusing)
        row["caught"] += caught
        cell = cells[bp.taxonomy_id]
        cell[f"{label}_n"] += 1
        cell[f"{label}_passed"] += not refusing
        cell[f"{label}_caught"] += caught
        for rule in {f.rule for f in refusing}:
            rules[rule][f"{label}_refused"] += 1
        for rule in {f.rule for f in findings} - {f.rule for f in refusing}:
            rules[rule][f"{label}_capped"] += 1
        if (label == "good" and refusing) or (label == "vague" and not caught):
            misses.append({"id": item_id, "label": label, "rules": sorted({f.rule for f in findings})})
    return {
        "sets": {k: dict(v) for k, v in sets.items()},
        "rules": {k: dict(v) for k, v in sorted(rules.items())},
        "cells": {k: dict(v) for k, v in sorted(cells.items())},
        "misses": misses,
    }


def _pct(a: int, n: int) -> str:
    return f"{a}/{n} ({100 * a / n:.0f} %)" if n else "-"


def main() -> int:
    """Print the tables (or ``--json``); exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    start = time.monotonic()
    result = measure()
    result["seconds"] = round(time.monotonic() - start, 2)
    result["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    good, vague = result["sets"].get("good", {}), result["sets"].get("vague", {})
    ok = good.get("passed_first_ask", 0) >= 0.95 * good.get("n", 1) and vague.get("caught", 0) >= 0.9 * vague.get(
        "n", 1
    )
    result["targets_met"] = ok
    if args.json:
        print(json.dumps(result, indent=2))
        return 0 if ok else 1
    print("set            n   passed at first ask   clean (no finding)   refused   caught")
    for label, row in result["sets"].items():
        n = row["n"]
        print(
            f"{label:13} {n:3}   {_pct(row['passed_first_ask'], n):19}   {_pct(row['clean'], n):18}   "
            f"{row['refused']:7}   {_pct(row['caught'], n)}"
        )
    print("\nrule                      good refused  good capped  vague refused  vague capped  model-stored caught")
    for rule, row in result["rules"].items():
        stored = row.get("model-stored_refused", 0) + row.get("model-stored_capped", 0)
        print(
            f"{rule:25} {row.get('good_refused', 0):12} {row.get('good_capped', 0):12} "
            f"{row.get('vague_refused', 0):14} {row.get('vague_capped', 0):13} {stored:20}"
        )
    print("\ncell    good passed   vague caught   model-stored caught")
    for cell, row in result["cells"].items():
        print(
            f"{cell:7} {_pct(row.get('good_passed', 0), row.get('good_n', 0)):13} "
            f"{_pct(row.get('vague_caught', 0), row.get('vague_n', 0)):14} "
            f"{_pct(row.get('model-stored_caught', 0), row.get('model-stored_n', 0))}"
        )
    for miss in result["misses"]:
        print(f"miss: {miss['label']} {miss['id']}: {', '.join(miss['rules']) or 'no finding'}")
    print(f"\n{result['seconds']} s, peak RSS {result['peak_rss_mib']} MiB; targets met: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
