"""Mini-SWE-agent's ``DefaultAgent`` with the observer attached (a subclass, not a new loop).

The observer itself (detectors, escalation, recovery) lives in observer/; this is only the
hook into Mini-SWE-agent's step boundaries, so it sits with the harness adapter that runs it.
"""

from __future__ import annotations

import os
from typing import Any

from twinforge.observer.core import Observer

os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")

from minisweagent.agents.default import DefaultAgent
from minisweagent.exceptions import InterruptAgentFlow

OBSERVER_STOP = "ObserverStop"


class ObservedAgent(DefaultAgent):
    """A DefaultAgent whose observer reads the trajectory on its own thread as it grows.

    After every step the agent hands the observer its messages and goes on; an intervention the
    observer has finished (its check, and its guidance, even when an LLM writes it) is delivered at
    the next step boundary (before the next model call) as one user message with DO / DON'T
    guidance. A step never waits for the observer. If the same misbehaviour comes back, the next
    message asks for a revised plan; if it comes back again, the run stops with exit status
    ``ObserverStop``.
    The observer's bookkeeping is saved in the trajectory under ``info.observer``.

    Args:
        model: Mini-SWE-agent model.
        env: Mini-SWE-agent environment.
        observer: The observer.
        **kwargs: DefaultAgent configuration.
    """

    def __init__(self, model: Any, env: Any, *, observer: Observer, **kwargs: Any) -> None:
        super().__init__(model, env, **kwargs)
        self.observer = observer

    def query(self) -> dict[str, Any]:
        """Deliver a pending intervention, then ask the model as usual."""
        intervention = self.observer.ready(self.n_calls)
        if intervention is not None:
            extra = {"observer": intervention.as_dict()}
            if intervention.level == "stop":
                raise InterruptAgentFlow(
                    {
                        "role": "exit",
                        "content": intervention.text,
                        "extra": {"exit_status": OBSERVER_STOP, "submission": "", **extra},
                    }
                )
            self.add_messages(self.model.format_message(role="user", content=intervention.text, extra=extra))
        result: dict[str, Any] = super().query()
        self.observer.answered(self.n_calls)
        return result

    def step(self) -> list[dict[str, Any]]:
        """One step, then the grown trajectory goes to the observer (it decides when to check)."""
        try:
            result: list[dict[str, Any]] = super().step()
            return result
        finally:
            self.observer.observe(self.messages, self.n_calls)

    def serialize(self, *extra_dicts: dict[str, Any]) -> dict[str, Any]:
        """The usual trajectory, plus ``info.observer``."""
        data: dict[str, Any] = super().serialize(*extra_dicts, {"info": {"observer": self.observer.summary()}})
        return data
