"""The sandbox environment: Mini-SWE-agent's commands, plus the reserved ``twinforge-check`` answered on the host.

``twinforge-check`` runs the static gate, ``twinforge-check --dynamic`` the whole gate in Docker, on
the host, on the pair the agent is writing; the reply lists each failing check with its evidence and
a repair hint (``guidelines/implementer/repair-hints.yaml``). Calls per round are bounded
(``[implementer] checks_per_round``, ``dynamic_checks_per_round``). The agent's token budget is
checked before every action: Mini-SWE-agent's own loop ends with ``LimitsExceeded`` when it is used up.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from twinforge.harness import Shell, ShellEnvironment, ShellEnvironmentConfig
from twinforge.implementer.hints import failing_text
from twinforge.taskpair.gate.validate import CheckResult

RESERVED = re.compile(r"(?<![\w/-])twinforge-check(?![\w-])")
"""The reserved command; a command that mentions it anywhere is answered by the host, not run."""

Checker = Callable[[bool], list[CheckResult]]
"""``dynamic -> checks``: the static gate (False) or the whole gate (True) on the pair."""


@dataclass
class GateCalls:
    """The round's ``twinforge-check`` bookkeeping.

    Attributes:
        static_left: Static checks still allowed this round.
        dynamic_left: Dynamic checks still allowed this round.
        answered: Failing check names per answered call, in order.
    """

    static_left: int
    dynamic_left: int
    answered: list[list[str]] = field(default_factory=list)


class GateEnvironment(ShellEnvironment):
    """:class:`~twinforge.harness.ShellEnvironment` whose reserved command is answered by the gate on the host.

    Args:
        shell: The sandbox.
        config: Recorded settings (cwd, per-command timeout).
        checker: Runs the gate on the pair.
        calls: This round's allowance and record.
        over_budget: Returns why the blueprint's budget is used up (``None`` while it is not).
    """

    def __init__(
        self,
        shell: Shell,
        config: ShellEnvironmentConfig,
        checker: Checker,
        calls: GateCalls,
        over_budget: Callable[[], str | None],
    ) -> None:
        super().__init__(shell, config)
        self.checker = checker
        self.calls = calls
        self.over_budget = over_budget

    def execute(self, action: dict[str, Any], cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        """Answer ``twinforge-check`` on the host; run anything else in the sandbox.

        Raises:
            minisweagent.exceptions.LimitsExceeded: The blueprint's token budget is used up.
            minisweagent.exceptions.Submitted: The agent submitted.
        """
        reason = self.over_budget()
        if reason is not None:
            from minisweagent.exceptions import LimitsExceeded

            raise LimitsExceeded(
                {"role": "exit", "content": reason, "extra": {"exit_status": "LimitsExceeded", "submission": ""}}
            )
        command = str(action.get("command", ""))
        if RESERVED.search(command):
            return self._check("--dynamic" in command)
        return super().execute(action, cwd, timeout=timeout)

    def _check(self, dynamic: bool) -> dict[str, Any]:
        kind = "whole gate in Docker" if dynamic else "static gate"
        left = self.calls.dynamic_left if dynamic else self.calls.static_left
        if left <= 0:
            text = f"twinforge-check: no {kind} checks left in this round; fix what the last report named, then submit."
            return {"output": text, "returncode": 2, "exception_info": ""}
        if dynamic:
            self.calls.dynamic_left -= 1
        else:
            self.calls.static_left -= 1
        checks = self.checker(dynamic)
        failed = [c.name for c in checks if not c.passed]
        self.calls.answered.append(failed)
        verdict = "PASSED" if checks and not failed else "FAILED"
        text = f"twinforge-check ({kind}): {verdict}\n{failing_text(checks, 'agent')}"
        return {"output": text, "returncode": 0 if verdict == "PASSED" else 1, "exception_info": ""}
