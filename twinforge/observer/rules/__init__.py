"""Misbehaviour rules, one module per class; each a pure function of a trajectory prefix."""

from __future__ import annotations

from collections.abc import Callable

from twinforge.observer.findings import Finding
from twinforge.observer.rules import drift, reasoning, tool_failure
from twinforge.observer.spec import RunSpec
from twinforge.observer.trajectory import Step


def detect(
    steps: list[Step], spec: RunSpec | None = None, exists: Callable[[str], bool] | None = None
) -> list[Finding]:
    """Every finding of every class over ``steps``, ordered by first step."""
    found = reasoning.detect(steps) + tool_failure.detect(steps) + drift.detect(steps, spec, exists)
    return sorted(found, key=lambda f: (min(f.steps, default=0), f.key))


__all__ = ["detect", "drift", "reasoning", "tool_failure"]
