"""Harness adapters by name (``[calibration] harness``, ``evaluate --harness``; docs/runtime.md, "Harnesses")."""

from __future__ import annotations

from typing import Any

from twinforge.harness.claude_code import ClaudeCode
from twinforge.harness.cli_harness import CliHarness
from twinforge.harness.codex import Codex
from twinforge.harness.exceptions import HarnessError
from twinforge.harness.mini_swe_agent import MiniSweAgent
from twinforge.harness.opencode import OpenCode
from twinforge.harness.pi import Pi
from twinforge.harness.protocol import Harness

HARNESSES: dict[str, type[MiniSweAgent] | type[CliHarness]] = {
    "mini-swe-agent": MiniSweAgent,
    "claude-code": ClaudeCode,
    "codex": Codex,
    "opencode": OpenCode,
    "pi": Pi,
}
"""Every harness of the reference study: Mini-SWE-agent runs its loop on the host; the four CLIs run
inside the task container (``twinforge.harness.cli_harness``)."""

CLI_HARNESSES: dict[str, type[CliHarness]] = {"claude-code": ClaudeCode, "codex": Codex, "opencode": OpenCode, "pi": Pi}


def adapter_of(name: str) -> type[MiniSweAgent] | type[CliHarness]:
    """The adapter class of a harness name (its modes, default version, API shape, call cap).

    Raises:
        HarnessError: Unknown name (the message lists the valid ones).
    """
    adapter = HARNESSES.get(name)
    if adapter is None:
        raise HarnessError(f"unknown harness {name!r}; valid: {', '.join(HARNESSES)}")
    return adapter


def make_harness(name: str, **options: Any) -> Harness:
    """Build a harness adapter by name.

    Args:
        name: Adapter name: ``mini-swe-agent``, ``claude-code``, ``codex``, ``opencode`` or ``pi``.
        **options: The adapter's options (every harness: ``version``, ``permission``; Mini-SWE-agent
            also action mode, grammar, observer; options of the other kind are ignored).

    Raises:
        HarnessError: Unknown name (the message lists the valid ones), or an option the adapter refuses.
    """
    adapter_of(name)
    if name in CLI_HARNESSES:
        return CLI_HARNESSES[name](**{k: v for k, v in options.items() if k in ("version", "permission")})
    return MiniSweAgent(**options)
