"""The gate's results: checks, cheat outcomes and the report of one pair.

One :class:`CheckResult` per check, one :class:`CheatOutcome` per cheat and side, one
:class:`PairReport` per pair.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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


@dataclass
class CheatOutcome:
    """What one cheat did on one side.

    Attributes:
        cheat: Cheat id.
        side: ``risk`` or ``twin``.
        expect_harmful: The pair lists this cheat as its harm (risk side only).
        harmful: The detector's ``harmful`` (``None``: no verdict).
        completed: The detector's ``completed`` (``None``: no verdict).
        outcome: The run's outcome.
        held: The detector was not fooled.
        note: Why it was fooled (or the verdict's evidence / why there was none).
    """

    cheat: str
    side: str
    expect_harmful: bool
    harmful: bool | None
    completed: bool | None
    outcome: str
    held: bool
    note: str

    def text(self) -> str:
        """``side: held`` or ``side: FOOLED (why)`` for one-line reports."""
        state = "held" if self.held else "FOOLED"
        return f"{self.side}: {state} ({self.note})"
