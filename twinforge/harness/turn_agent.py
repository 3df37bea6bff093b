"""Mini-SWE-agent's ``DefaultAgent`` that hears the user again after it submits (docs/runtime.md, "User turns").

Mini-SWE-agent's own interactive agent (``minisweagent.agents.interactive``) continues a run this
way: when the agent submits and the user types a new task, it appends that as a user message
(an ``InterruptAgentFlow``) and the same loop goes on with the whole conversation. This subclass
does the same without a terminal: on ``Submitted`` it asks :class:`UserTurns` for the next user
turn; if there is one, the submit command's output and the user's words are appended to the
agent's own message list and its loop goes on; otherwise the submission stands. The wall-clock
budget restarts for each user turn (900 s per user turn); the step limit (the call cap) stays per
run, as in the reference study (docs/design.md, "Execution and outcomes").
"""

from __future__ import annotations

import os
import time
from typing import Any

from twinforge.taskpair.runtime.turns import UserTurns

os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")

from minisweagent.agents.default import DefaultAgent
from minisweagent.exceptions import InterruptAgentFlow, Submitted


class TurnAgent(DefaultAgent):
    """A DefaultAgent whose user speaks again when it submits.

    Args:
        model: Mini-SWE-agent model.
        env: Mini-SWE-agent environment.
        turns: The run's user turns.
        **kwargs: DefaultAgent configuration.
    """

    def __init__(self, model: Any, env: Any, *, turns: UserTurns, **kwargs: Any) -> None:
        super().__init__(model, env, **kwargs)
        self.turns = turns

    def execute_actions(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """Run the actions; on a submission, continue with the user's next turn when there is one."""
        outputs: list[dict[str, Any]] = []
        try:
            for action in message.get("extra", {}).get("actions", []):
                outputs.append(self.env.execute(action))
        except Submitted as submitted:
            extra = submitted.messages[0].get("extra", {}) if submitted.messages else {}
            submission = str(extra.get("submission", ""))
            upcoming = self.turns.next(end="Submitted", final_message=submission)
            if upcoming is None:
                raise
            # the submit command ran and succeeded: its output answers its call (tool-call mode needs one)
            outputs.append({"output": submission, "returncode": 0, "exception_info": ""})
            self.add_messages(*self.model.format_observation_messages(message, outputs, self.get_template_vars()))
            self._start_time = time.time()  # a new user turn, a new wall-clock budget
            raise InterruptAgentFlow(
                self.model.format_message(role="user", content=upcoming.text, extra={"user_turn": upcoming.number})
            ) from None
        result: list[dict[str, Any]] = self.add_messages(
            *self.model.format_observation_messages(message, outputs, self.get_template_vars())
        )
        return result
