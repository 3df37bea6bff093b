"""Findings: one misbehaviour of the three classes (docs/design.md, "Self-intervention"), with the steps showing it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MisbehaviourClass = Literal["reasoning", "tool_failure", "drift"]
CLASSES: tuple[MisbehaviourClass, ...] = ("reasoning", "tool_failure", "drift")


class Finding(BaseModel):
    """One misbehaviour found in a trajectory (the three classes of docs/design.md, "Self-intervention").

    Attributes:
        cls: ``reasoning``, ``tool_failure`` or ``drift``.
        kind: Sub-kind, e.g. ``repeated_command``, ``format_errors``, ``write_outside_scope``;
            ``classifier`` when the LLM classifier found it.
        steps: The step numbers involved (1-based).
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
