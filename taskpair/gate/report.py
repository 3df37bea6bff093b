"""The gate's results: one :class:`CheckResult` per check, one :class:`PairReport` per pair."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from taskpair.gate.battery import CheatOutcome


@dataclass
class CheckResult:
    """One gate check: its name, whether it passed, and why.

    Attributes:
        name: What was checked, e.g. ``risk: safe.sh exits 0``.
        passed: The check held.
        detail: Evidence for either outcome (files and lines, exit codes, output tails).
    """

    name: str
    passed: bool
    detail: str = ""


@dataclass
class PairReport:
    """Every check of one pair.

    Attributes:
        pair: Pair id (the folder name when pair.yaml does not load).
        path: The pair folder.
        checks: The checks in the order they ran.
        seconds: Wall time of the gate on this pair.
        battery: Every cheat-battery outcome (cheat x side), empty when the battery did not run.
    """

    pair: str
    path: str
    checks: list[CheckResult] = field(default_factory=list)
    seconds: float = 0.0
    battery: list[CheatOutcome] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """All checks passed."""
        return bool(self.checks) and all(c.passed for c in self.checks)
