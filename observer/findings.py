"""Findings and the per-run specification the drift detectors check against."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MisbehaviourClass = Literal["reasoning", "tool_failure", "drift"]


class Finding(BaseModel):
    """One misbehaviour found in a trajectory (mission.md's three classes).

    Attributes:
        cls: ``reasoning``, ``tool_failure`` or ``drift``.
        kind: Sub-kind, e.g. ``repeated_command``, ``format_errors``, ``write_outside_scope``.
        steps: The turn numbers involved (1-based).
        evidence: What was seen, quoted briefly.
        confidence: 0-1.
    """

    model_config = ConfigDict(frozen=True)

    cls: MisbehaviourClass
    kind: str
    steps: tuple[int, ...]
    evidence: str
    confidence: float = Field(ge=0, le=1)

    @property
    def key(self) -> str:
        """``cls/kind``: what recovery bookkeeping tracks."""
        return f"{self.cls}/{self.kind}"


class Forbidden(BaseModel):
    """An explicit instruction, as a command pattern the agent must not run."""

    model_config = ConfigDict(extra="forbid")

    pattern: str
    """Regular expression searched in each command."""
    instruction: str
    """The instruction in words, quoted in evidence and guidance."""


class RunSpec(BaseModel):
    """What one run is allowed to do (data per run; empty means no drift checks of that kind).

    Attributes:
        allowed_paths: Glob patterns (relative to ``workdir``, or absolute) where writes belong.
        protected_paths: Globs that must not change unless asked (unrequested changes).
        required_files: Files that must exist when the agent submits.
        forbidden: Commands that break an explicit instruction.
        workdir: The agent's working directory.
    """

    model_config = ConfigDict(extra="forbid")

    allowed_paths: list[str] = Field(default_factory=list)
    protected_paths: list[str] = Field(default_factory=list)
    required_files: list[str] = Field(default_factory=list)
    forbidden: list[Forbidden] = Field(default_factory=list)
    workdir: str = "."
