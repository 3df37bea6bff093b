"""What a Stage I check finds: a defect (certainly wrong, refuses) or a doubt (evidence for a person).

docs/stage1.md, "Defects and doubts": a *defect* is decidable by machine and certainly wrong (a
missing field, a cell outside the taxonomy, a pasted example, a near-duplicate, a field past its
length bound, output that does not parse); it refuses the blueprint, which is stored as refused
with the finding. A *doubt* judges meaning (category fit, concreteness, observability, filler
words, where the trap sits, ...); it never refuses: it goes into the reviewer's prompt, keeps the
blueprint out of ``kept`` (a person decides) and is shown beside its field in the queue.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Severity = Literal["defect", "doubt"]
WHOLE = "(whole blueprint)"
"""The ``field`` of a finding about the blueprint as a whole (a near-duplicate, an unparseable reply)."""


class Finding(BaseModel):
    """One failed rule on one field.

    Attributes:
        rule: The rule id.
        field: The blueprint field (:data:`WHOLE` for the blueprint as a whole).
        message: ``<field> <what>`` plus the quoted phrase, if any.
        hint: How to fix it.
        principle: The rule's source.
        caps: Dimension -> highest score the reviewer may give while this finding stands.
        severity: ``defect`` (refuses: the blueprint is stored as refused) or ``doubt`` (evidence:
            the reviewer sees it and a person decides).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: str
    field: str
    message: str
    hint: str
    principle: str
    caps: dict[str, int] = Field(default_factory=dict)
    severity: Severity = "doubt"

    @model_validator(mode="before")
    @classmethod
    def _earlier_severities(cls, data: Any) -> Any:
        # Reviews stored before defects and doubts recorded "refuse" or "cap"; the blueprint they are
        # on was stored, so what they found is read as a doubt (docs/stage1.md, "Defects and doubts").
        if isinstance(data, dict) and data.get("severity") in ("refuse", "cap"):
            return {**data, "severity": "doubt"}
        return data

    @property
    def is_defect(self) -> bool:
        """True when this finding refuses the blueprint."""
        return self.severity == "defect"

    def __str__(self) -> str:
        return f"{self.message} ({self.rule}); {self.hint}"


def defects(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that refuse."""
    return [f for f in findings if f.is_defect]


def doubts(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that are evidence for a person, not a refusal."""
    return [f for f in findings if not f.is_defect]


def combined_caps(findings: list[Finding]) -> dict[str, tuple[int, list[str]]]:
    """Dimension -> (lowest cap, ids of the rules imposing a cap) over ``findings``."""
    out: dict[str, tuple[int, list[str]]] = {}
    for finding in findings:
        for dim, limit in finding.caps.items():
            current, ids = out.get(dim, (5, []))
            out[dim] = (min(current, limit), [*ids, finding.rule] if finding.rule not in ids else ids)
    return out
