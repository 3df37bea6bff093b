"""The implement record: what Stage II did for one blueprint, ``implementation/<blueprint-id>.yaml``.

Written by the same class that reads it, committed with the blueprint's status change (and the
pair, when it passed), so ``git log`` shows every outcome with its last gate report.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from twinforge.core.llm import FlatUsage
from twinforge.taskpair.gate.validate import CheckResult, PairReport

Mode = Literal["archetype", "agent"]
Outcome = Literal["implemented", "impl_failed"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CheckOutcome(_Strict):
    """One gate check as recorded."""

    name: str
    passed: bool
    detail: str = ""

    @classmethod
    def of(cls, check: CheckResult) -> CheckOutcome:
        """From the gate's own result."""
        return cls(name=check.name, passed=check.passed, detail=check.detail[:2000])


def outcomes(report: PairReport | list[CheckResult]) -> list[CheckOutcome]:
    """The recorded form of a gate report or a list of checks."""
    checks = report.checks if isinstance(report, PairReport) else report
    return [CheckOutcome.of(c) for c in checks]


class SlotAttempt(_Strict):
    """Archetype mode: one slot fill and what the static gate said about its render."""

    n: int
    slots: dict[str, Any] | None = None
    """The values (``None``: the reply never validated as the slot schema)."""
    errors: list[str] = Field(default_factory=list)
    """Schema errors of the last re-ask, when the fill failed."""
    failed_checks: list[str] = Field(default_factory=list)
    """Static gate checks the render failed (fed back as the next re-ask)."""
    calls: int = 0


_RECORDED_USAGE = ("calls", "prompt_tokens", "completion_tokens")
"""The usage fields an implement record stores flat (its ``seconds`` is wall time, its own field)."""


class RoundRecord(_Strict, FlatUsage):
    """One round: a fill (archetype) or an agent run, then the whole gate.

    ``usage`` is stored as the flat keys ``calls``, ``prompt_tokens``, ``completion_tokens``
    (files written before the usage value existed load unchanged); ``seconds`` is the round's wall time.
    """

    flat_keys = _RECORDED_USAGE

    n: int
    failed_checks: list[str] = Field(default_factory=list)
    """Checks the round's whole-gate run failed (empty: it passed)."""
    seconds: float = 0.0
    slot_attempts: list[SlotAttempt] = Field(default_factory=list)
    exit_status: str | None = None
    """Agent mode: Mini-SWE-agent's exit status."""
    trajectory: str | None = None
    gate_calls: int = 0
    """Agent mode: ``twinforge-check`` calls answered in the round."""
    interventions: int = 0
    recovered: int = 0
    shadowed: int = 0
    """Interventions the observer would have made in shadow mode (``--no-intervene``)."""
    first_failed: list[str] = Field(default_factory=list)
    """Agent mode: the checks that failed at the round's first ``twinforge-check`` (what broke first)."""


class ImplementRecord(_Strict, FlatUsage):
    """The content of ``implementation/<blueprint-id>.yaml``.

    ``usage`` (over every round) is stored as the flat keys ``calls``, ``prompt_tokens``,
    ``completion_tokens``; ``seconds`` is the blueprint's wall time.
    """

    flat_keys = _RECORDED_USAGE

    schema_version: Literal[1] = 1
    blueprint_id: str
    pair_id: str
    mode: Mode
    outcome: Outcome
    reason: str
    """Why it ended so: ``passed the whole gate``, the failing checks, or ``needs agent mode: ...``."""
    provenance: str
    """``archetype:<name>@<version>`` or ``agent:mini-swe-agent``."""
    model: str
    prompt_version: str = ""
    rounds: list[RoundRecord] = Field(default_factory=list)
    gate: list[CheckOutcome] = Field(default_factory=list)
    """The last whole-gate report."""
    failed_checks: list[str] = Field(default_factory=list)
    findings: list[dict[str, Any]] = Field(default_factory=list)
    """Gate-level observer findings (the same check failing in 3 rounds)."""
    seconds: float = 0.0
    interventions: int = 0
    recovered: int = 0
    shadowed: int = 0
    observed: bool = False
    started_at: datetime
    finished_at: datetime
