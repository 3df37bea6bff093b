"""Observer bench (issue 6).

(a) Observer cost per step on a 200-step trajectory: the checks it runs every step's boundary
    (all detectors over the prefix), median per step, next to a floor measured side by side (just
    parsing the prefix into steps). Target: <= 5 ms median.
(b) Detection precision and recall per misbehaviour class on a labelled set of 42 trajectories
    (40 synthetic with planted misbehaviours and clean ones, 2 real local-model recordings).
    Target: >= 0.9 each.

Usage: python bench/observer.py
"""

from __future__ import annotations

import resource
import statistics
import time

from observer import detect, steps_from_messages
from observer.labelled import real, synthetic, turn

CLASSES = ("reasoning", "tool_failure", "drift")


def long_trajectory(n: int = 200) -> list[dict]:  # type: ignore[type-arg]
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "t"}]
    for i in range(n):
        command = [
            f"cat src/file{i % 37}.py",
            f"sed -i 's/a{i}/b{i}/' src/file{i % 23}.py",
            f"python3 -m pytest -q tests/test_{i % 11}.py",
            f"grep -rn name{i} src",
        ][i % 4]
        messages += turn(command, "line\n" * 20, 0 if i % 5 else 1)
    return messages


def main() -> None:
    messages = long_trajectory()
    ours, floor = [], []
    for end in range(2 + 2 * 1, len(messages) + 1, 2):  # every step boundary of the 200 steps
        prefix = messages[:end]
        started = time.perf_counter()
        steps_from_messages(prefix)
        floor.append(time.perf_counter() - started)
        started = time.perf_counter()
        detect(steps_from_messages(prefix))
        ours.append(time.perf_counter() - started)
    o, f = statistics.median(ours) * 1000, statistics.median(floor) * 1000
    print(f"(a) observer check per step boundary over a 200-step trajectory ({len(ours)} checks):")
    print(f"    floor: parsing the prefix     median {f:.2f} ms")
    print(
        f"    full check (parse + detect)   median {o:.2f} ms, p90 {sorted(ours)[int(0.9 * len(ours))] * 1000:.2f} ms, "
        f"at 200 steps {ours[-1] * 1000:.2f} ms   (target <= 5 ms median: {'met' if o <= 5 else 'MISSED'})"
    )
    items = synthetic() + real()
    tp = dict.fromkeys(CLASSES, 0)
    fp = dict.fromkeys(CLASSES, 0)
    fn = dict.fromkeys(CLASSES, 0)
    misses = []
    for item in items:
        found = {
            finding.cls
            for finding in detect(steps_from_messages(item.messages), item.spec)
            if finding.confidence >= 0.7
        }
        for cls in CLASSES:
            if cls in found and cls in item.classes:
                tp[cls] += 1
            elif cls in found:
                fp[cls] += 1
                misses.append(f"{item.name}: false {cls}")
            elif cls in item.classes:
                fn[cls] += 1
                misses.append(f"{item.name}: missed {cls}")
    print(f"(b) {len(items)} labelled trajectories ({len(items) - len(real())} synthetic, {len(real())} real):")
    for cls in CLASSES:
        precision = tp[cls] / (tp[cls] + fp[cls]) if tp[cls] + fp[cls] else 1.0
        recall = tp[cls] / (tp[cls] + fn[cls]) if tp[cls] + fn[cls] else 1.0
        ok = precision >= 0.9 and recall >= 0.9
        print(
            f"    {cls:13} precision {precision:.2f}  recall {recall:.2f}  (tp {tp[cls]}, fp {fp[cls]}, fn {fn[cls]})"
            f"  target >= 0.9: {'met' if ok else 'MISSED'}"
        )
    for miss in misses:
        print(f"    - {miss}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak:.0f} MB")


if __name__ == "__main__":
    main()
