"""The report at the reference study's scale: import and tables for 86,496 run records.

The reference study ran 11 models x 5 harnesses (51 combinations) on 212 pairs with k = 4:
51 x 212 x 2 sides x 4 = 86,496 evaluation records (docs/calibration.md, "Report"). This bench makes
synthetic records of that shape (seeded outcomes: twins mostly CAPABLE, risk runs COMPROMISED
with a per-model rate, a few UNDETERMINED and OVERTIME), then times, side by side with a baseline of
one eighth of the pairs: ``records import`` of the JSON Lines (parse + one transaction), the report's
tables from the stored rows (``compute_report``), and the whole ``build_report`` with its files and
figures. It prints seconds per step, the ratio to the baseline and this process's peak resident memory.

Usage: python bench/report_scale.py [--pairs 212] [--baseline-pairs 27] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from twinforge.evaluation.report import build_report, compute_report  # noqa: E402
from twinforge.runs.records import RecordsDB  # noqa: E402
from twinforge.runs.transfer import RunExport, dump_lines, import_records, parse_lines  # noqa: E402
from twinforge.taskpair import Outcome  # noqa: E402

MODELS = [f"bench:model-{i:02d}" for i in range(11)]
HARNESSES = ["mini-swe-agent", "codex", "claude-code", "opencode", "gemini-cli"]
COMBINATIONS = [(m, h) for m in MODELS for h in HARNESSES][:51]
K = 4


def synthetic(pairs: int, seed: int) -> list[RunExport]:
    """Records of ``pairs`` pairs on the 51 combinations, k = 4."""
    rng = random.Random(seed)
    cells = [f"S{1 + i % 2}-R{1 + i % 9}" for i in range(pairs)]
    found = []
    for index, (model, harness) in enumerate(COMBINATIONS):
        rate = 0.1 + 0.6 * index / len(COMBINATIONS)
        for p in range(pairs):
            for side in ("risk", "twin"):
                for k in range(1, K + 1):
                    roll = rng.random()
                    if roll < 0.01:
                        outcome = Outcome.UNDETERMINED
                    elif roll < 0.02:
                        outcome = Outcome.OVERTIME
                    elif side == "twin":
                        outcome = Outcome.COMPLETED if rng.random() < 0.93 else Outcome.INCOMPLETE
                    else:
                        outcome = Outcome.COMPROMISED if rng.random() < rate else Outcome.INCOMPLETE
                    found.append(
                        RunExport(
                            pair=f"pair-{p:03d}",
                            cell=cells[p],
                            side=side,
                            purpose="evaluation",
                            model=model,
                            harness=harness,
                            repetition=k,
                            outcome=outcome,
                            runs=K,
                            digest="env",
                            calls=10,
                            prompt_tokens=100_000,
                            completion_tokens=5_000,
                            seconds=200.0,
                        )
                    )
    return found


def measure(pairs: int, seed: int) -> dict[str, float]:
    """Seconds per step for one scale."""
    runs = synthetic(pairs, seed)
    lines = list(dump_lines(runs))
    times: dict[str, float] = {"records": float(len(lines))}
    with tempfile.TemporaryDirectory(prefix="report-scale-") as tmp:
        records = RecordsDB(f"sqlite:///{Path(tmp) / 'records.db'}")
        started = time.perf_counter()
        import_records(records, parse_lines(lines, "bench.jsonl"))
        times["import"] = time.perf_counter() - started
        started = time.perf_counter()
        rows = records.runs(status="done")
        times["read rows"] = time.perf_counter() - started
        started = time.perf_counter()
        compute_report(rows)
        times["tables"] = time.perf_counter() - started
        started = time.perf_counter()
        build_report(records, Path(tmp) / "report")
        times["build_report"] = time.perf_counter() - started
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=212)
    parser.add_argument("--baseline-pairs", type=int, default=27)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    baseline = measure(args.baseline_pairs, args.seed)
    full = measure(args.pairs, args.seed)
    print(f"{'step':<14}{'baseline':>12}{'full':>12}{'ratio':>8}")
    for step in baseline:
        ratio = full[step] / baseline[step] if baseline[step] else float("nan")
        print(f"{step:<14}{baseline[step]:>12.2f}{full[step]:>12.2f}{ratio:>8.2f}")
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"pairs: {args.baseline_pairs} vs {args.pairs}; peak resident memory: {peak_mib:.0f} MiB")


if __name__ == "__main__":
    main()
