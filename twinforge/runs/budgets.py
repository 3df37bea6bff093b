"""The budgets of one run: the model-call cap (Mini-SWE-agent only) and the wall-clock budget per user turn.

docs/calibration.md, "Budgets", as the reference study ran them: every harness has 900 s per user
turn (``[agent] turn_timeout_s`` of the side's task.toml) and a per-command timeout (30 s); only
Mini-SWE-agent has a model-call cap (40, 60 for some R8 tasks; ``[agent] model_calls``, set per
pair). The CLIs, whose loops the study left alone, run until they stop or the turn budget ends.

This module is the one place a run's budgets are decided (:meth:`Budgets.of`) and the one place a
user turn's wall-clock budget starts (:meth:`Budgets.turn_seconds`): a pair with several user turns
gives each turn the same budget there.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from twinforge.taskpair.format.spec import AgentBudget


class Budgets(BaseModel):
    """The budgets one run had (part of the run key: runs under other budgets are other runs).

    Attributes:
        model_calls: The model-call cap in force (the task's, or a lower ``--max-calls``); ``None``
            for a harness without a call cap (every CLI: the turn budget alone ends it).
        task_model_calls: The task's own cap from ``task.toml``.
        turn_timeout_s: Wall-clock budget of each user turn, seconds (OVERTIME past it).
        command_timeout_s: Per-command timeout, seconds.
    """

    model_config = ConfigDict(extra="forbid")

    model_calls: int | None
    task_model_calls: int
    turn_timeout_s: float
    command_timeout_s: float

    @property
    def capped(self) -> bool:
        """A call cap below the task's own budget was imposed (e.g. the demo's 12 calls)."""
        return self.model_calls is not None and self.model_calls < self.task_model_calls

    @classmethod
    def of(cls, agent: AgentBudget, max_calls: int | None = None, *, call_cap: bool = True) -> Budgets:
        """A side's budgets from its ``task.toml`` for a harness.

        Args:
            agent: The side's ``[agent]`` budgets.
            max_calls: A lower call cap for a quick look (``--max-calls``).
            call_cap: The harness has a call cap (Mini-SWE-agent); without one, ``max_calls`` does
                not apply either.
        """
        calls = None if not call_cap else agent.model_calls if max_calls is None else min(agent.model_calls, max_calls)
        return cls(
            model_calls=calls,
            task_model_calls=agent.model_calls,
            turn_timeout_s=agent.turn_timeout_s,
            command_timeout_s=agent.command_timeout_s,
        )

    def turn_seconds(self) -> float:
        """The wall-clock budget of one user turn, from the moment the turn starts (900 s by default)."""
        return self.turn_timeout_s

    def key(self) -> str:
        """The budgets part of a run record's key: runs under other budgets are other runs."""
        calls = "none" if self.model_calls is None else str(self.model_calls)
        return f"calls={calls};turn={self.turn_timeout_s:g};cmd={self.command_timeout_s:g}"
