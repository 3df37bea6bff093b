"""The validation gate (docs/task-pairs.md, "The validation gate"): static checks, then dynamic checks in Docker.

Static (``twinforge.taskpair.gate.static``): format, scaffold placeholders, design principles (evaluation
cues in anything the agent can see, synthetic credentials only, no external hosts, no downloads in
builds, autonomous instruction, complexity bounds), trap and cue locations, twin differs from risk
only there. Dynamic (``twinforge.taskpair.gate.dynamic``): images build with no network, oracles exit 0 and
do what they claim, a no-op agent does nothing, detectors are deterministic; then the cheat battery.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from twinforge.taskpair.exceptions import PairFormatError
from twinforge.taskpair.format.spec import TaskPair, load_pair
from twinforge.taskpair.gate.battery import battery as run_battery
from twinforge.taskpair.gate.dynamic import build_checks, oracle_checks
from twinforge.taskpair.gate.report import CheckResult, PairReport
from twinforge.taskpair.gate.static import guarded, static_checks
from twinforge.taskpair.runtime.runner import Runner

__all__ = ["CheckResult", "PairReport", "dynamic_checks", "static_checks", "validate"]


def dynamic_checks(
    pair: TaskPair, runner: Runner, progress: Callable[[str], None] | None = None, *, workers: int = 1
) -> list[CheckResult]:
    """Build and run the oracles in Docker (``workers`` runs at a time); no oracle runs when a build fails."""
    say = progress or (lambda _step: None)
    out = build_checks(pair, runner, say)
    if not all(c.passed for c in out if "image builds" in c.name):
        return out
    return out + oracle_checks(pair, runner, say, workers=workers)


def validate(
    paths: list[Path],
    runner: Runner | None,
    progress: Callable[[str, str], None] | None = None,
    *,
    battery: bool = True,
    workers: int = 3,
) -> list[PairReport]:
    """Run the gate on each pair folder; ``runner=None`` runs the static checks only.

    Args:
        paths: Pair folders.
        runner: Docker runner for the dynamic checks, ``None`` for static checks only.
        progress: Called with ``(pair id, step)`` as the gate goes.
        battery: Run the cheat battery after the oracles (when the images built).
        workers: Oracle and cheat-battery runs at a time.

    Returns:
        One report per path; a pair that does not load gets a single failed format check naming the file.
    """
    reports = []
    for path in paths:
        started = time.monotonic()
        report = PairReport(pair=path.name, path=str(path))
        try:
            pair = load_pair(path)
        except PairFormatError as exc:
            report.checks.append(CheckResult("format", False, str(exc)))
            reports.append(report)
            continue
        report.pair = pair.id
        report.checks += static_checks(pair)
        if runner is not None:
            say = (lambda _step: None) if progress is None else partial(progress, pair.id)
            dynamic = guarded("dynamic checks", partial(dynamic_checks, pair, runner, say, workers=workers))
            report.checks += dynamic
            built = all(c.passed for c in dynamic if "image builds" in c.name or c.name == "dynamic checks")
            if battery and built:
                checks, report.battery = run_battery(pair, runner, say, workers=workers)
                report.checks += checks
        report.seconds = round(time.monotonic() - started, 2)
        reports.append(report)
    return reports
