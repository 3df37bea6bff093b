"""Every archetype through the whole gate (static, oracles, cheat battery) for both attack sources.

The default test suite gates two archetypes in Docker (tests/implementer/test_implementer_docker.py) to keep
its time small; this sweep renders every archetype for each of its sources with each archetype's example slot values (no
model) and runs the same gate `twinforge implement` runs, so an archetype that falls behind a gate or
detector change is found here (docs/implementer.md, "Tests and bench").

It prints one row per archetype x source: gate verdict, failing checks, cheat-battery outcomes held,
gate seconds, then the pass count and peak resident memory of this process.

Usage: python bench/archetype_sweep.py [--only NAME[,NAME]] [--sources S1,S2] [--workers 3]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from twinforge.blueprints import Blueprint  # noqa: E402
from twinforge.implementer.archetypes.catalog import load_archetypes  # noqa: E402
from twinforge.implementer.archetypes.render import own_blueprint, render_pair  # noqa: E402
from twinforge.implementer.archetypes.spec import Archetype, Source  # noqa: E402
from twinforge.taskpair.gate.validate import validate  # noqa: E402
from twinforge.taskpair.runtime.runner import Runner  # noqa: E402

REFERENCE = ROOT / "twinforge" / "guidelines" / "reference-pairs"
LABELLED = ROOT / "tests" / "data" / "stage1" / "checks-labelled.yaml"


def blueprint_of(archetype: Archetype, source: Source) -> Blueprint:
    """The blueprint an archetype was derived from (a reference pair's, a labelled good one's, or for
    ``derived_from: new`` its own), moved to the cell of ``source``."""
    derived_from, cell = archetype.spec.derived_from, f"{source}-{archetype.spec.risk}"
    if derived_from == "new":
        return own_blueprint(archetype, source)
    if (REFERENCE / derived_from).is_dir():
        data = yaml.safe_load((REFERENCE / derived_from / "pair.yaml").read_text())["blueprint"]
    else:
        items = yaml.safe_load(LABELLED.read_text())["items"]
        data = next(i["blueprint"] for i in items if i["id"] == derived_from)
    return Blueprint.model_validate({**data, "taxonomy_id": cell})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="", help="comma-separated archetype names (default: all)")
    parser.add_argument("--sources", default="S1,S2")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--static-only", action="store_true", help="the static gate only (seconds, no Docker)")
    args = parser.parse_args()
    only = {n for n in args.only.split(",") if n}
    sources = args.sources.split(",")
    rows = []
    with tempfile.TemporaryDirectory(prefix="archetype-sweep-") as tmp:
        runner = Runner(Path(tmp) / "runs")
        for archetype in load_archetypes():
            if only and archetype.spec.name not in only:
                continue
            for source in (s for s in archetype.spec.sources if s in sources):
                cell = f"{source}-{archetype.spec.risk}"
                root = render_pair(
                    archetype,
                    archetype.example_slots(),
                    pair_root=Path(tmp) / "tasks" / f"sweep-{cell.lower()}",
                    blueprint_id=f"{cell}-00000000",
                    blueprint=blueprint_of(archetype, source),
                    model="scripted",
                )
                started = time.monotonic()
                (report,) = validate([root], None if args.static_only else runner, workers=args.workers)
                failed = [c.name for c in report.checks if not c.passed]
                for check in (c for c in report.checks if not c.passed):
                    print(f"    FAILED {check.name}: {check.detail[:1500]}", flush=True)
                held = sum(o.held for o in report.battery)
                row = (archetype.ref, source, report.passed, failed, held, len(report.battery))
                rows.append(row)
                print(
                    f"{archetype.ref:32} {source}  {'PASS' if report.passed else 'FAIL'}  battery {held}/"
                    f"{len(report.battery)} held  {time.monotonic() - started:5.0f} s  {'; '.join(failed)}",
                    flush=True,
                )
    passed = sum(r[2] for r in rows)
    print(f"\n{passed}/{len(rows)} archetype x source renders passed the whole gate")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak:.0f} MiB (containers not counted)")
    sys.exit(0 if passed == len(rows) else 1)


if __name__ == "__main__":
    main()
