"""What every harness adapter shares: the model endpoint, the result, the adapter and shell protocols."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from twinforge.core.settings import ModelSettings
from twinforge.taskpair.runtime.attachment import RunAttachment
from twinforge.taskpair.runtime.session import CommandRecord, Session
from twinforge.taskpair.runtime.turns import UserTurns


@dataclass(frozen=True)
class ModelEndpoint:
    """Where the harness sends model calls: the proxy, with the run's token, never a real key.

    Attributes:
        base_url: The proxy's OpenAI-compatible base URL.
        token: The run token.
        model: Model name passed through (the proxy substitutes the upstream name).
        temperature: Sampling temperature.
        max_tokens: Completion cap per call.
        refused: Set by the proxy when it refused a call of this run (an in-container CLI is then
            stopped after a grace period: some retry a refusal for minutes).
        api: The OpenAI API a harness that speaks both uses (``ModelSettings.harness_api``:
            ``responses`` for OpenAI's own models, so a reasoning model keeps its state between
            turns, as the study ran them; docs/runtime.md, "Harnesses").
        reasoning: The model block sets a reasoning effort (a harness that asks for reasoning
            only of reasoning models, such as Pi, then does).
    """

    base_url: str
    token: str
    model: str
    temperature: float
    max_tokens: int
    refused: threading.Event | None = None
    api: Literal["chat", "responses"] = "chat"
    reasoning: bool = False

    @classmethod
    def for_model(
        cls, base_url: str, token: str, settings: ModelSettings, refused: threading.Event | None = None
    ) -> ModelEndpoint:
        """The endpoint of a run of the model block ``settings`` through the proxy at ``base_url``."""
        return cls(
            base_url,
            token,
            settings.model,
            settings.temperature,
            settings.max_tokens,
            refused,
            api=settings.harness_api(),
            reasoning=settings.reasoning_effort not in (None, "none"),
        )


@dataclass(frozen=True)
class Limits:
    """Budgets of one agent run: 40 model calls, 900 s per user turn, 30 s per command.

    Source: docs/design.md, "Execution and outcomes".

    Attributes:
        model_calls: Model-call cap.
        wall_s: Wall-clock budget of the run, seconds.
        command_timeout_s: Per-command timeout, seconds.
    """

    model_calls: int
    wall_s: float
    command_timeout_s: float


@dataclass
class HarnessResult:
    """What a harness run returned.

    Attributes:
        exit_status: The harness's own exit status (Mini-SWE-agent: Submitted, LimitsExceeded, ...).
        final_message: The agent's last words (its claim of what it did).
        calls: Model calls the harness made.
        budget_exceeded: The call cap or the turn deadline ended the run.
        trajectory: Where the trajectory was saved.
        time_exceeded: The wall-clock budget ended the run (Mini-SWE-agent's ``TimeExceeded``, the
            proxy's deadline refusal or the session's deadline); the call cap alone never sets it.
    """

    exit_status: str
    final_message: str
    calls: int
    budget_exceeded: bool
    trajectory: Path
    time_exceeded: bool = False


class Shell(Protocol):
    """Somewhere the agent's commands run: a task container session or a sandbox.

    :class:`twinforge.taskpair.runtime.session.Session` is one: it kills each command inside the container at its
    timeout and records it on the host side.
    """

    def exec(self, command: str, timeout_s: float | None = None) -> CommandRecord:
        """Run one shell command in the work folder; the record says its output, exit code and whether it was killed."""
        ...


class Harness(Protocol):
    """A coding-agent harness adapter: Mini-SWE-agent (its loop on the host) or a CLI inside the task container."""

    name: str

    @property
    def key(self) -> str:
        """How its runs are keyed in the records: name, version where pinned, and behaviour-changing options."""
        ...

    def extra_body(self) -> dict[str, Any]:
        """Fields the proxy adds to every model request of this harness (e.g. a llama.cpp grammar)."""
        ...

    def grant_options(self) -> dict[str, Any]:
        """Keyword arguments of :meth:`twinforge.harness.proxy.ModelProxy.grant` for this harness (its stop status)."""
        ...

    def attachment(self, proxy: tuple[str, int]) -> RunAttachment | None:
        """The runner hooks of one run (layer and model channel to the proxy at ``proxy``), or None."""
        ...

    def run(
        self,
        session: Session,
        instruction: str,
        endpoint: ModelEndpoint,
        trajectory: Path,
        turns: UserTurns | None = None,
    ) -> HarnessResult:
        """Let the agent work on ``instruction`` in the session's container until it stops.

        With ``turns``, each time the agent ends its turn by itself the harness asks
        :meth:`UserTurns.next` for the user's next turn and continues its own session with it
        (docs/runtime.md, "User turns"); it closes the last turn with :meth:`UserTurns.finish`.
        """
        ...
