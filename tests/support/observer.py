"""An observed Mini-SWE-agent run on a scripted model, for the observer tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from twinforge.harness.agent import ObservedAgent
from twinforge.observer import Observer, RunSpec


class ReactiveModel:
    """A scripted Mini-SWE-agent model whose next command is a function of the conversation.

    Args:
        policy: The next command, given the messages.
        before: Called before every answer (e.g. wait for the observer: a model slower than its
            observer, ordered by events instead of time).
    """

    def __init__(
        self, policy: Callable[[list[dict[str, Any]]], str], before: Callable[[], object] | None = None
    ) -> None:
        from minisweagent.models.test_models import DeterministicModelConfig

        self.config = DeterministicModelConfig(outputs=[])
        self.policy = policy
        self.before = before
        self.calls = 0

    def query(self, messages: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        self.calls += 1
        if self.before is not None:
            self.before()
        command = self.policy(messages)
        return {
            "role": "assistant",
            "content": f"THOUGHT: go\n\n```mswea_bash_command\n{command}\n```",
            "extra": {"actions": [{"command": command}], "cost": 0.0},
        }

    def format_message(self, **kwargs: Any) -> dict[str, Any]:
        return dict(kwargs)

    def format_observation_messages(
        self, message: dict[str, Any], outputs: list[dict[str, Any]], template_vars: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        from minisweagent.models.utils.actions_text import format_observation_messages

        return format_observation_messages(
            outputs,
            observation_template="<returncode>{{output.returncode}}</returncode>\n{{output.output}}",
            template_vars=template_vars,
        )

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        return {}

    def serialize(self) -> dict[str, Any]:
        return {}


def observed_run(
    tmp_path: Path,
    policy: Callable[[list[dict[str, Any]]], str],
    *,
    steps: int = 20,
    spec: RunSpec | None = None,
    shadow: bool = False,
    observer: Observer | None = None,
    settle: bool = True,
) -> tuple[ObservedAgent, dict[str, Any], Observer]:
    """Run an observed agent on ``policy`` in ``tmp_path``.

    Args:
        settle: The model waits for the observer to finish its work before each answer, so an
            intervention found after step n is delivered at boundary n (deterministic, no timing).
            False: the model never waits (the observer may lag any number of steps).
    """
    from minisweagent.environments.local import LocalEnvironment

    (tmp_path / "a.txt").write_text("hello\n")
    observer = observer or Observer(interval=2, spec=spec, shadow=shadow)
    agent = ObservedAgent(
        ReactiveModel(policy, observer.settle if settle else None),
        LocalEnvironment(cwd=str(tmp_path)),
        observer=observer,
        system_template="system",
        instance_template="{{task}}",
        step_limit=steps,
        cost_limit=0.0,
    )
    info = agent.run(task="look at the folder and finish")
    observer.close()
    return agent, info, observer


def guidance_messages(agent: ObservedAgent) -> list[tuple[int, dict[str, Any]]]:
    out = []
    assistant = 0
    for message in agent.messages:
        if message.get("role") == "assistant":
            assistant += 1
        if (message.get("extra") or {}).get("observer"):
            out.append((assistant, message))
    return out
