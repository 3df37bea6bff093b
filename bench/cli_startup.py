"""Start-up cost of the ``twinforge`` command (docs/design.md, "Command-line start-up").

The test suite starts ``python -m twinforge`` as a subprocess about a hundred times, and every user
command pays the same start-up before it does anything, so the command line only imports what
builds the command tree: Typer, Rich and light modules; each command imports its implementation
when it runs. Target on this machine (2 cores): ``twinforge --help`` and ``twinforge <cmd> --help``
import in <= 0.9 s (the sum of ``python -X importtime`` self times, site start-up included).

For each case this prints the median over ``--runs`` processes of: the import time under
``-X importtime`` and the number of modules imported, the wall time and the peak RSS of a plain run
(no ``-X importtime``), each also as a ratio against the baseline case (``import typer, rich``,
measured in the same session), and the heavy modules the case imported. ``--before REF`` measures
the tree of a git commit beside the working tree (``git archive`` into a temporary folder, run from
there, so its ``twinforge`` package shadows the editable install) and prints after/before ratios.

    .venv/bin/python bench/cli_startup.py [--runs 5] [--before 91bcffa] [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout: the start-up rule's package list is the suite's

from tests.support.cli import HEAVY_AT_START, heavy_packages, importtime_rows  # noqa: E402

BASELINE = ("import typer, rich", ["-c", "import typer, rich"])
CASES: tuple[tuple[str, list[str]], ...] = (
    ("twinforge --help", ["-m", "twinforge", "--help"]),
    ("twinforge status --help", ["-m", "twinforge", "status", "--help"]),
    ("twinforge calibrate --help", ["-m", "twinforge", "calibrate", "--help"]),
    ("twinforge validate --help", ["-m", "twinforge", "validate", "--help"]),
    ("twinforge model --help", ["-m", "twinforge", "model", "--help"]),
    ("twinforge records export --help", ["-m", "twinforge", "records", "export", "--help"]),
)
"""(label, python arguments): the commands a user and the test suite start most."""

HEAVY = (*HEAVY_AT_START, "yaml")
"""Top-level packages the command line should not need to build its command tree (the suite's list,
tests/support/cli.py), and PyYAML, which ``init --help`` still imports for its preset list."""


@dataclass
class Figures:
    """Medians of one case over the runs: import ms, modules, wall ms, peak RSS MiB, heavy imports."""

    import_ms: float
    modules: int
    wall_ms: float
    rss_mib: float
    heavy: list[str]


def importtime(args: list[str], cwd: Path) -> tuple[float, int, list[str]]:
    """One ``-X importtime`` run: (sum of self times in ms, modules imported, heavy packages seen)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args], cwd=cwd, capture_output=True, text=True, check=True
    )
    rows = importtime_rows(done.stderr)
    names = [name for _, name in rows]
    return sum(us for us, _ in rows) / 1000, len(names), heavy_packages(names, HEAVY)


def plain_run(args: list[str], cwd: Path) -> tuple[float, float]:
    """One plain run: (wall ms, peak RSS MiB) of that one process (``os.wait4``'s rusage)."""
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(child.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {child.returncode} in {cwd}")
    return wall, usage.ru_maxrss / 1024


def measure(args: list[str], cwd: Path, runs: int) -> Figures:
    """Medians over ``runs`` processes of each figure."""
    timed = [importtime(args, cwd) for _ in range(runs)]
    plain = [plain_run(args, cwd) for _ in range(runs)]
    return Figures(
        import_ms=statistics.median(t[0] for t in timed),
        modules=int(statistics.median(t[1] for t in timed)),
        wall_ms=statistics.median(p[0] for p in plain),
        rss_mib=statistics.median(p[1] for p in plain),
        heavy=timed[-1][2],
    )


def extract(ref: str, into: Path) -> Path:
    """The tree of git commit ``ref`` of this checkout, unpacked into ``into`` (symlinks kept)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="tar")
    return into


def main() -> None:
    """Measure every case on the working tree (and ``--before``'s tree) and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="processes per case and tree (median)")
    parser.add_argument("--before", metavar="REF", help="a git commit to measure beside the working tree")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        trees = {"after": ROOT}
        if options.before:
            trees = {"before": extract(options.before, Path(tmp)), "after": ROOT}
        base = measure(BASELINE[1], ROOT, options.runs)
        figures = {
            tree: {label: measure(args, path, options.runs) for label, args in CASES} for tree, path in trees.items()
        }

    if options.json:
        body = {"baseline": asdict(base), **{t: {k: asdict(v) for k, v in f.items()} for t, f in figures.items()}}
        print(json.dumps(body, indent=2))
        return
    print(
        f"baseline `{BASELINE[0]}`: import {base.import_ms:.0f} ms ({base.modules} modules), "
        f"wall {base.wall_ms:.0f} ms, peak RSS {base.rss_mib:.0f} MiB; median of {options.runs} runs"
    )
    header = (
        f"{'case':34} {'tree':6} {'import ms':>9} {'x base':>6} {'modules':>7} "
        f"{'wall ms':>8} {'x base':>6} {'RSS MiB':>7}"
    )
    if options.before:
        header += f" {'import after/before':>19} {'wall after/before':>17}"
    print(header + "  heavy modules imported")
    for label, _args in CASES:
        for tree, cases in figures.items():
            f = cases[label]
            row = (
                f"{label:34} {tree:6} {f.import_ms:9.0f} {f.import_ms / base.import_ms:6.2f} {f.modules:7d} "
                f"{f.wall_ms:8.0f} {f.wall_ms / base.wall_ms:6.2f} {f.rss_mib:7.0f}"
            )
            if options.before:
                old = figures["before"][label]
                row += f" {f.import_ms / old.import_ms:19.2f} {f.wall_ms / old.wall_ms:17.2f}"
            print(row + "  " + (", ".join(f.heavy) or "-"))


if __name__ == "__main__":
    main()
