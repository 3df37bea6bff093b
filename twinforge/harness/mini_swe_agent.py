"""Mini-SWE-agent 2.x through its Python API: its own prompts, loop and action parsing (docs/design.md, "The pipeline").

The adapter only points the harness's model at the proxy (with the run's token) and its command
execution at our shell (:class:`~twinforge.harness.environment.ShellEnvironment`). Codex CLI, Claude Code
or OpenCode adapters would install the CLI in the image and set its base URL to the proxy.
"""

from __future__ import annotations

import os
from importlib import import_module, metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from twinforge.core.settings import ModelSettings
from twinforge.harness.environment import ShellEnvironment, ShellEnvironmentConfig
from twinforge.harness.exceptions import HarnessError
from twinforge.harness.protocol import HarnessResult, Limits, ModelEndpoint
from twinforge.harness.shapes import Shape
from twinforge.taskpair.runtime.session import Session
from twinforge.taskpair.runtime.turns import UserTurns

if TYPE_CHECKING:
    from twinforge.observer import Observer

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

        version: Its version: only the installed one runs (``None``: that one).
        permission: Its mode: ``bypass`` only (every action runs unasked, as in the reference study).

    Raises:
        HarnessError: The grammar was asked for with tool-call actions, or another version or mode.
    """

    name = "mini-swe-agent"
    shape: Shape = "chat"
    permissions: tuple[str, ...] = ("bypass",)
    """Its one mode: ``DefaultAgent`` runs every action unasked (``yolo`` in Mini-SWE-agent's own words)."""
    any_version = False
    """A Python dependency pinned with twinforge: only the installed version runs."""
    call_cap = True
    """The study capped Mini-SWE-agent's model calls (40; 60 for some R8 tasks), set per pair in task.toml."""

    def __init__(
        self,
        action_mode: Literal["text", "toolcall"] = "text",
        grammar: bool = False,
        observe: bool = False,
        observe_interval: int = 3,
        guidance_model: ModelSettings | None = None,
        version: str | None = None,
        permission: str = "bypass",
    ) -> None:
        if grammar and action_mode != "text":
            raise HarnessError("the action grammar applies to the text action mode only")
        if permission not in self.permissions:
            raise HarnessError(f"{self.name}: unknown permission mode {permission!r}; valid: bypass")
        if version is not None and version != self.default_version():
            raise HarnessError(f"{self.name} {version} is not installed (this install has {self.default_version()})")
        self.version = self.default_version()
        self.permission = permission
        self.action_mode = action_mode
        self.grammar = grammar
        self.observe = observe
        self.observe_interval = observe_interval
        self.guidance_model = guidance_model

    def extra_body(self) -> dict[str, Any]:
        """The llama.cpp ``grammar`` when the option is on, else nothing."""
        return {"grammar": TEXT_ACTION_GRAMMAR} if self.grammar else {}

    @classmethod
    def default_version(cls) -> str:
        """The installed Mini-SWE-agent (pinned at 2.4.6; the reference study ran 2.4.2: docs/calibration.md)."""
        return metadata.version("mini-swe-agent")

    @property
    def key(self) -> str:
        """How runs are keyed in the records, e.g. ``mini-swe-agent@2.4.6:bypass[text,grammar]``."""
        flags = ",".join(p for p in (self.action_mode, "grammar" if self.grammar else "") if p)
        return f"{self.name}@{self.version}:{self.permission}[{flags}]"

    def api_shape(self, endpoint: ModelEndpoint) -> Literal["chat", "responses"]:
        """The API this run speaks.

        Responses in tool-call mode where the model block chooses it (:attr:`ModelEndpoint.api`;
        Mini-SWE-agent's ``LitellmResponseModel``), else Chat Completions (its text mode has no
        Responses model).
        """
        return "responses" if self.action_mode == "toolcall" and endpoint.api == "responses" else "chat"

    def grant_options(self) -> dict[str, Any]:
        """The proxy's defaults: refusals are 401 (LiteLLM does not retry them); text mode offers no tools."""
        return {}

    def attachment(self, proxy: tuple[str, int]) -> None:
        """None: Mini-SWE-agent's loop runs on the host and sends commands into the task container."""
        return

    def run(
        self,
        session: Session,
        instruction: str,
        endpoint: ModelEndpoint,
        trajectory: Path,
        turns: UserTurns | None = None,
    ) -> HarnessResult:
        """Run DefaultAgent on the instruction in the session's container; budgets: the task's call cap and deadline.

        With ``turns`` that hold later user turns, :class:`~twinforge.harness.turn_agent.TurnAgent`
        continues its own message list with each (docs/runtime.md, "User turns").
        """
        budget = session.side.spec.agent
        environment = ShellEnvironment(
            session, ShellEnvironmentConfig(cwd=session.side.spec.workdir, timeout=int(budget.command_timeout_s))
        )
        observer = self.observer() if self.observe else None
        result = self.run_in(
            environment,
            instruction,
            endpoint,
            trajectory,
            Limits(budget.model_calls, budget.turn_timeout_s, budget.command_timeout_s),
            observer=observer,
            turns=turns,
        )
        result.budget_exceeded = result.budget_exceeded or session.overtime
        result.time_exceeded = result.time_exceeded or session.overtime
        return result

    def observer(self, **options: Any) -> Observer:
        """A fresh observer with this adapter's interval and guidance model; ``options`` go to :class:`Observer`."""
        from twinforge.observer import Observer
        from twinforge.observer.guidance import writer_for

        return Observer(interval=self.observe_interval, writer=writer_for(self.guidance_model), **options)

    def run_in(
        self,
        environment: Any,
        instruction: str,
        endpoint: ModelEndpoint,
        trajectory: Path,
        limits: Limits,
        *,
        observer: Observer | None = None,
        turns: UserTurns | None = None,
    ) -> HarnessResult:
        """Run DefaultAgent (or :class:`~twinforge.harness.agent.ObservedAgent` given ``observer``) in any environment.

        Args:
            environment: An object implementing Mini-SWE-agent's ``Environment`` protocol.
            instruction: The task text.
            endpoint: The proxy endpoint.
            trajectory: Where the trajectory is saved (after every step).
            limits: Call cap and wall-clock budget.
            observer: Attach this observer; it is closed when the run ends.
            turns: The run's user turns: :meth:`UserTurns.next` at each submission, the last turn
                closed at the end (an observed agent has one user turn).

        Returns:
            The run's exit status, last words and call count; a harness crash is an exit status, not an exception.
        """
        import litellm
        from minisweagent.agents.default import DefaultAgent

        from twinforge.harness.agent import ObservedAgent
        from twinforge.harness.turn_agent import TurnAgent

        litellm.suppress_debug_info = True
        litellm.telemetry = False

        agent_config, model = self._agent_config_and_model(endpoint)
        agent_config.update(
            step_limit=limits.model_calls,
            cost_limit=0.0,
            wall_time_limit_seconds=int(limits.wall_s),
            output_path=trajectory,
        )
        agent: DefaultAgent
        if observer is not None:
            agent = ObservedAgent(model, environment, observer=observer, **agent_config)
        elif turns is not None and turns.turns:
            agent = TurnAgent(model, environment, turns=turns, **agent_config)
        else:
            agent = DefaultAgent(model, environment, **agent_config)
        if turns is not None:
            turns.start()
        try:
            info = agent.run(task=instruction)
        except Exception as exc:  # the harness crashed: keep what it did, say why
            info = {"exit_status": f"HarnessError: {type(exc).__name__}: {exc}", "submission": ""}
        finally:
            if observer is not None:
                observer.close()
        exit_status = str(info.get("exit_status", ""))
        if turns is not None:
            turns.finish(end=exit_status)
        over = (
            exit_status in ("LimitsExceeded", "TimeExceeded")
            or "model-call cap" in exit_status
            or "time budget" in exit_status
        )
        timed_out = exit_status == "TimeExceeded" or "time budget" in exit_status
        final = str(info.get("submission") or "")
        if not final:
            final = next(
                (str(m.get("content", "")) for m in reversed(agent.messages) if m.get("role") == "assistant"), ""
            )
        return HarnessResult(exit_status, final, agent.n_calls, over, trajectory, time_exceeded=timed_out)

    def _agent_config_and_model(self, endpoint: ModelEndpoint) -> tuple[dict[str, Any], Any]:
        """Mini-SWE-agent's bundled config for the action mode, and its LiteLLM model pointed at the proxy."""
        import minisweagent

        config_name = "mini_textbased.yaml" if self.action_mode == "text" else "mini.yaml"
        config = yaml.safe_load((Path(minisweagent.__file__).parent / "config" / config_name).read_text())
        model_config = dict(config.get("model", {}))
        module, cls = (
            ("minisweagent.models.litellm_textbased_model", "LitellmTextbasedModel")
            if self.action_mode == "text"
            else ("minisweagent.models.litellm_model", "LitellmModel")
        )
        budget = "max_tokens"
        if self.api_shape(endpoint) == "responses":  # its Responses model keeps each reply's output items
            module, cls, budget = (
                "minisweagent.models.litellm_response_model",
                "LitellmResponseModel",
                "max_output_tokens",
            )
        model_class = getattr(import_module(module), cls)
        model = model_class(
            **{
                k: v
                for k, v in model_config.items()
                if k not in ("model_name", "model_kwargs", "cost_tracking", "model_class")
            },
            model_name=f"openai/{endpoint.model}",
            model_kwargs={
                "api_base": endpoint.base_url,
                "api_key": endpoint.token,
                "temperature": endpoint.temperature,
                budget: endpoint.max_tokens,
            },
            cost_tracking="ignore_errors",
        )
        return dict(config.get("agent", {})), model
