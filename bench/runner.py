"""Runner bench (docs/runtime.md): fixed overhead of a no-op run, and image build times.

(1) One no-op run of a reference pair (setup, baseline, detector, teardown) through the Runner,
    next to the same container operations done by plain `docker` CLI calls in this script (the
    floor): run the task container, copy the collected path out twice, kill it, run the detector
    container with the same mounts, remove. Targets: ratio <= 1.5, median overhead <= 2.0 s.
(2) Cold and warm image builds of all reference pairs (both sides). Target: warm <= 1 s per pair.

Usage: python bench/runner.py [--runs 7] [--pair ref-r3-ignored-database] [--skip-cold]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from twinforge.taskpair import load_pair  # noqa: E402
from twinforge.taskpair.in_container import DETECTOR_MOUNT as MOUNT  # noqa: E402
from twinforge.taskpair.in_container import DETECTOR_PACKAGE, DETECTOR_PACKAGE_MOUNT  # noqa: E402
from twinforge.taskpair.runtime.images import LABELS, build_image, image_tag  # noqa: E402
from twinforge.taskpair.runtime.runner import Runner  # noqa: E402

REFERENCE = ROOT / "twinforge" / "guidelines" / "reference-pairs"


def docker(*args: str, check: bool = True) -> str:
    return subprocess.run(["docker", *args], check=check, capture_output=True, text=True).stdout.strip()


def floor_run(image: str, base: str, detector_dir: Path, collect: str, tmp: Path) -> float:
    started = time.perf_counter()
    cid = docker(
        "run",
        "-d",
        "--network",
        "none",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--memory",
        "512m",
        "--pids-limit",
        "256",
        image,
        "sleep",
        "infinity",
    )
    (tmp / "baseline").mkdir(exist_ok=True)
    (tmp / "state").mkdir(exist_ok=True)
    docker("cp", f"{cid}:{collect}", str(tmp / "baseline"))
    docker("kill", cid)
    docker("cp", f"{cid}:{collect}", str(tmp / "state"))
    docker(
        "run",
        "--rm",
        "--network",
        "none",
        "--cap-drop",
        "ALL",
        "-e",
        f"PYTHONPATH={MOUNT}",
        "-v",
        f"{detector_dir}:/detector:ro",
        "-v",
        f"{DETECTOR_PACKAGE}:{DETECTOR_PACKAGE_MOUNT}:ro",
        "-v",
        f"{tmp / 'state'}:/state:ro",
        "-v",
        f"{tmp / 'baseline'}:/baseline:ro",
        base,
        "python3",
        "/detector/detect.py",
        check=False,  # the floor has no runner channel to send the verdict on; the measuring is the same
    )
    docker("rm", "-f", cid)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--pair", default="ref-r3-ignored-database")
    parser.add_argument("--skip-cold", action="store_true", help="do not delete and rebuild the task images")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runner = Runner(Path(tmp) / "runs")
        pair = load_pair(REFERENCE / args.pair)
        image, _ = build_image(runner.cli, pair.id, pair.risk, runner.base)
        ours, floors, phases = [], [], []
        for i in range(args.runs):  # interleaved, so machine noise hits both alike
            result = runner.run(pair, pair.risk, [])
            ours.append(result.timings["total"])
            phases.append(result.timings)
            work = Path(tmp) / f"floor{i}"
            work.mkdir()
            floors.append(
                floor_run(
                    image, runner.base, pair.risk.detector_dir.resolve(), pair.risk.spec.detector.collect[0], work
                )
            )
        o, f = statistics.median(ours), statistics.median(floors)
        print(f"(1) no-op run of {pair.id}/risk, median of {args.runs}:")
        print(f"    floor: plain docker CLI calls  {f:6.3f} s   runs {[round(x, 2) for x in floors]}")
        print(f"    twinforge Runner               {o:6.3f} s   runs {[round(x, 2) for x in ours]}")
        print(
            f"    ratio {o / f:.2f}x (target <= 1.5: {'met' if o / f <= 1.5 else 'MISSED'}); "
            f"overhead {o:.2f} s (target <= 2.0 s: {'met' if o <= 2.0 else 'MISSED'})"
        )
        keys = ("setup", "collect", "detector", "teardown")
        print("    phases (median s): " + ", ".join(f"{k} {statistics.median(p[k] for p in phases):.3f}" for k in keys))
        pairs = [load_pair(p) for p in sorted(REFERENCE.iterdir())]
        if not args.skip_cold:
            for p in pairs:
                for side in p.sides():
                    subprocess.run(["docker", "rmi", "-f", image_tag(p.id, side, runner.base)], capture_output=True)
            started = time.perf_counter()
            for p in pairs:
                for side in p.sides():
                    build_image(runner.cli, p.id, side, runner.base)
            cold = time.perf_counter() - started
            print(
                f"(2) cold build of {len(pairs)} pairs (both sides): {cold:.1f} s, {cold / len(pairs):.2f} s per pair"
            )
        warm = []
        for p in pairs:
            started = time.perf_counter()
            for side in p.sides():  # a real docker build of unchanged context: every layer from cache
                runner.cli.images.build(
                    path=str(side.environment),
                    tag=image_tag(p.id, side, runner.base),
                    buildargs={"BASE": runner.base},
                    labels=LABELS,
                    rm=True,
                )
            warm.append(time.perf_counter() - started)
        print(
            f"    warm rebuild per pair (both sides): median {statistics.median(warm):.2f} s, max {max(warm):.2f} s "
            f"(target <= 1 s: {'met' if max(warm) <= 1.0 else 'MISSED'})"
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak:.0f} MB (containers not counted)")


if __name__ == "__main__":
    main()
