"""Harness adapters: run a coding-agent harness against a live task container (mission.md).

An adapter keeps its harness's native tools, prompts, context handling and loop; it only points
the harness's model at the proxy (with the run's token) and its command execution at the
runner's container. :class:`MiniSweAgent` is the reference adapter; Codex CLI, Claude Code or
OpenCode adapters would install the CLI in the image and set its base URL to the proxy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml

from calibration.exceptions import CalibrationError
from taskpair.session import Session
from twinforge.settings import ModelSettings

# mini-swe-agent prints a banner on import; LiteLLM would fetch its model cost map from the
# internet at import time. Nothing may leave this machine: use the map bundled with the package.
os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_TELEMETRY", "False")

# One well-formed action per reply for small local models on llama.cpp: a short THOUGHT, then
# exactly one mswea_bash_command block (recorded on the run as the calibration model's option).
TEXT_ACTION_GRAMMAR = r"""
root ::= "THOUGHT: " thought "\n\n```mswea_bash_command\n" command "\n```"
thought ::= [^`\n] [^`]{0,600}
command ::= [^`\n] [^`]{0,2000}
"""


@dataclass(frozen=True)
class ModelEndpoint:
    """Where the harness sends model calls: the proxy, with the run's token, never a real key.

    Attributes:
        base_url: The proxy's OpenAI-compatible base URL.
        token: The run token.
        model: Model name passed through (the proxy substitutes the upstream name).
        temperature: Sampling temperature.
        max_tokens: Completion cap per call.
    """

    base_url: str
    token: str
    model: str
    temperature: float
    max_tokens: int


@dataclass
class HarnessResult:
    """What a harness run returned.

    Attributes:
        exit_status: The harness's own exit status (Mini-SWE-agent: Submitted, LimitsExceeded, ...).
        final_message: The agent's last words (its claim of what it did).
        calls: Model calls the harness made.
        budget_exceeded: The call cap or the turn deadline ended the run.
        trajectory: Where the trajectory was saved.
    """

    exit_status: str
    final_message: str
    calls: int
    budget_exceeded: bool
    trajectory: Path


class Harness(Protocol):
    """A coding-agent harness adapter."""

    name: str

    def extra_body(self) -> dict[str, Any]:
        """Fields the proxy adds to every model request of this harness (e.g. a llama.cpp grammar)."""
        ...

    def run(self, session: Session, instruction: str, endpoint: ModelEndpoint, trajectory: Path) -> HarnessResult:
        """Let the agent work on ``instruction`` in the session's container until it stops."""
        ...


class _SessionEnvironment:
    """Mini-SWE-agent's Docker environment, attached to the runner's container instead of starting one.

    Commands run through :meth:`Session.exec`, which kills them inside the container at the task's
    timeout and records them on the host side.
    """

    def __init__(self, session: Session) -> None:
        from minisweagent.environments.docker import DockerEnvironment, DockerEnvironmentConfig

        self._docker = DockerEnvironment.__new__(DockerEnvironment)  # no container of its own
        self._docker.config = DockerEnvironmentConfig(
            image="(runner container)",
            cwd=session.side.spec.workdir,
            timeout=int(session.side.spec.agent.command_timeout_s),
        )
        self._docker.container_id = session.container.id
        self.config = self._docker.config
        self.session = session

    def execute(self, action: dict[str, Any], cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        record = self.session.exec(str(action.get("command", "")), timeout_s=timeout)
        output: dict[str, Any] = {"output": record.output, "returncode": record.exit_code, "exception_info": ""}
        if record.killed:
            output["exception_info"] = "The command timed out and was killed."
        self._docker._check_finished(output)  # raises Submitted on the native completion signal
        return output

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        vars_: dict[str, Any] = self._docker.get_template_vars(**kwargs)
        return vars_

    def serialize(self) -> dict[str, Any]:
        data: dict[str, Any] = self._docker.serialize()
        return data


class MiniSweAgent:
    """Mini-SWE-agent 2.x through its Python API (``DefaultAgent``), its own prompts and loop.

    Args:
        action_mode: ``text`` (native text-based actions, best for small local models) or
            ``toolcall`` (native tool calling, where the endpoint supports it).
        grammar: Send :data:`TEXT_ACTION_GRAMMAR` as llama.cpp ``grammar`` (text mode only; for
            local llama.cpp servers, off for API models).
        observe: Attach the self-intervention observer (our own agents; never for calibration,
            where the weak model must act unaided).
        observe_interval: Observer check interval in steps.
        guidance_model: ``[models.observer]``: a model that writes the observer's guidance.
    """

    name = "mini-swe-agent"

    def __init__(
        self,
        action_mode: Literal["text", "toolcall"] = "text",
        grammar: bool = False,
        observe: bool = False,
        observe_interval: int = 3,
        guidance_model: ModelSettings | None = None,
    ) -> None:
        if grammar and action_mode != "text":
            raise CalibrationError("the action grammar applies to the text action mode only")
        self.action_mode = action_mode
        self.grammar = grammar
        self.observe = observe
        self.observe_interval = observe_interval
        self.guidance_model = guidance_model

    def extra_body(self) -> dict[str, Any]:
        """The llama.cpp ``grammar`` when the option is on, else nothing."""
        return {"grammar": TEXT_ACTION_GRAMMAR} if self.grammar else {}

    def run(self, session: Session, instruction: str, endpoint: ModelEndpoint, trajectory: Path) -> HarnessResult:
        """Run DefaultAgent on the instruction; budgets: the task's call cap and turn deadline."""
        import litellm
        import minisweagent
        from minisweagent.agents.default import DefaultAgent

        from observer import Observer
        from observer.agent import ObservedAgent
        from observer.guidance import writer_for

        litellm.suppress_debug_info = True
        litellm.telemetry = False

        config_name = "mini_textbased.yaml" if self.action_mode == "text" else "mini.yaml"
        config = yaml.safe_load((Path(minisweagent.__file__).parent / "config" / config_name).read_text())
        agent_config = dict(config.get("agent", {}))
        model_config = dict(config.get("model", {}))
        budget = session.side.spec.agent
        model_kwargs: dict[str, Any] = {
            "api_base": endpoint.base_url,
            "api_key": endpoint.token,
            "temperature": endpoint.temperature,
            "max_tokens": endpoint.max_tokens,
        }
        module, cls = (
            ("minisweagent.models.litellm_textbased_model", "LitellmTextbasedModel")
            if self.action_mode == "text"
            else ("minisweagent.models.litellm_model", "LitellmModel")
        )
        model_class = getattr(import_module(module), cls)
        model = model_class(
            **{
                k: v
                for k, v in model_config.items()
                if k not in ("model_name", "model_kwargs", "cost_tracking", "model_class")
            },
            model_name=f"openai/{endpoint.model}",
            model_kwargs=model_kwargs,
            cost_tracking="ignore_errors",
        )
        agent_config.update(
            step_limit=budget.model_calls,
            cost_limit=0.0,
            wall_time_limit_seconds=int(budget.turn_timeout_s),
            output_path=trajectory,
        )
        environment = _SessionEnvironment(session)
        watcher = Observer(interval=self.observe_interval, writer=writer_for(self.guidance_model))
        agent: DefaultAgent = (
            ObservedAgent(model, environment, observer=watcher, **agent_config)
            if self.observe
            else DefaultAgent(model, environment, **agent_config)
        )
        try:
            info = agent.run(task=instruction)
        except Exception as exc:  # the harness crashed: keep what it did, say why
            info = {"exit_status": f"HarnessError: {type(exc).__name__}: {exc}", "submission": ""}
        finally:
            watcher.close()
        exit_status = str(info.get("exit_status", ""))
        over = (
            exit_status in ("LimitsExceeded", "TimeExceeded")
            or session.overtime
            or "model-call cap" in exit_status
            or "time budget" in exit_status
        )
        final = str(info.get("submission") or "")
        if not final:
            final = next(
                (str(m.get("content", "")) for m in reversed(agent.messages) if m.get("role") == "assistant"), ""
            )
        return HarnessResult(exit_status, final, agent.n_calls, over, trajectory)


HARNESSES = {"mini-swe-agent": "calibration.harness:MiniSweAgent"}


def make_harness(name: str, **options: Any) -> Harness:
    """Build a harness adapter by name.

    Raises:
        CalibrationError: Unknown name (the message lists the valid ones).
    """
    target = HARNESSES.get(name)
    if target is None:
        raise CalibrationError(f"unknown harness {name!r}; valid: {', '.join(HARNESSES)}")
    module, cls = target.split(":")
    harness: Harness = getattr(import_module(module), cls)(**options)
    return harness
