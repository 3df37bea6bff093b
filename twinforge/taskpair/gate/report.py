"""The gate's results: checks, cheat outcomes and the report of one pair.

One :class:`CheckResult` per check, one :class:`CheatOutcome` per cheat and side, one
:class:`PairReport` per pair; :class:`StoredGateReport` is the file a recorded gate run leaves.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field
from pydantic.dataclasses import dataclass as pydantic_dataclass


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


@pydantic_dataclass
class PairReport:
    """Every check of one pair (``validate --json`` prints a list of these, ``passed`` included).

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

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool:
        """All checks passed."""
        return bool(self.checks) and all(c.passed for c in self.checks)


class StoredGateReport(BaseModel):
    """``.twinforge/gate/<pair-id>.json``: the last full gate report of a pair in a workspace.

    ``validate`` writes it beside the ``validation`` record of pair.yaml (which keeps only the
    digest, the verdict and the names of failed checks), so the viewer can show every check and the
    cheat-battery table (docs/task-pairs.md). Git-ignored workspace state, like all of ``.twinforge/``.

    Attributes:
        schema_version: File format version.
        pair: Pair id.
        digest: The pair digest the gate ran on.
        passed: Every check passed.
        at: When it was recorded.
        seconds: Wall time of the gate on this pair.
        checks: Every check in the order it ran.
        battery: Every cheat-battery outcome.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    pair: str
    digest: str
    passed: bool
    at: datetime
    seconds: float = 0.0
    checks: list[dict[str, Any]] = Field(default_factory=list)
    battery: list[dict[str, Any]] = Field(default_factory=list)

    @staticmethod
    def relpath(pair_id: str) -> str:
        """Where it lives in the workspace."""
        return f".twinforge/gate/{pair_id}.json"

    @classmethod
    def of(cls, report: PairReport, digest: str, at: datetime) -> StoredGateReport:
        """The stored form of a gate report."""
        return cls(
            pair=report.pair,
            digest=digest,
            passed=report.passed,
            at=at,
            seconds=report.seconds,
            checks=[asdict(c) for c in report.checks],
            battery=[asdict(c) for c in report.battery],
        )
