"""Harness adapters by name (``[calibration] harness``)."""

from __future__ import annotations

from typing import Any

from twinforge.harness.exceptions import HarnessError
from twinforge.harness.mini_swe_agent import MiniSweAgent
from twinforge.harness.protocol import Harness

HARNESSES: dict[str, type[MiniSweAgent]] = {"mini-swe-agent": MiniSweAgent}


def make_harness(name: str, **options: Any) -> Harness:
    """Build a harness adapter by name.

    Args:
        name: Adapter name, e.g. ``mini-swe-agent``.
        **options: The adapter's options (action mode, grammar, observer).

    Raises:
        HarnessError: Unknown name (the message lists the valid ones).
    """
    adapter = HARNESSES.get(name)
    if adapter is None:
        raise HarnessError(f"unknown harness {name!r}; valid: {', '.join(HARNESSES)}")
    return adapter(**options)
