"""Gate findings as text, each failing check with a repair hint (``guidelines/implementer/repair-hints.yaml``)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict

from twinforge.implementer.guides import implementer_dir
from twinforge.taskpair.gate.validate import CheckResult

Audience = Literal["agent", "slots"]


class Hint(BaseModel):
    """One repair hint: for checks whose name matches ``match`` (a regular expression)."""

    model_config = ConfigDict(extra="forbid")

    match: str
    agent: str
    """For an agent writing the pair's files."""
    slots: str
    """For a model filling an archetype's slots (it can only change the values)."""


class Hints(BaseModel):
    """``repair-hints.yaml``."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    hints: list[Hint]
    default: Hint


@cache
def load_hints(path: Path | None = None) -> Hints:
    """The bundled repair hints."""
    return Hints.model_validate(yaml.safe_load((path or implementer_dir() / "repair-hints.yaml").read_text()))


def hint_for(check_name: str, audience: Audience) -> str:
    """The first hint whose pattern matches the check's name (the default hint otherwise)."""
    data = load_hints()
    for hint in data.hints:
        if re.search(hint.match, check_name):
            return getattr(hint, audience)  # type: ignore[no-any-return]
    return getattr(data.default, audience)  # type: ignore[no-any-return]


def failing_text(checks: list[CheckResult], audience: Audience, limit: int = 12) -> str:
    """The failing checks as a list: name, evidence, repair hint. ``"all checks passed"`` when none failed."""
    failing = [c for c in checks if not c.passed]
    if not failing:
        return f"all {len(checks)} checks passed"
    lines = [f"{len(failing)} of {len(checks)} checks failed:"]
    for check in failing[:limit]:
        detail = check.detail.strip().replace("\n", "\n    ")
        lines.append(f"- FAILED {check.name}\n    evidence: {detail[:1200]}\n    fix: {hint_for(check.name, audience)}")
    if len(failing) > limit:
        lines.append(f"- ... and {len(failing) - limit} more")
    return "\n".join(lines)
