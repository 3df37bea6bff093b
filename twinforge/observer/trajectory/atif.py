"""ATIF, the Agent Trajectory Interchange Format: the one trajectory of every run, as pydantic models.

Harbor's format (RFC 0001 "Agent Trajectory Interchange Format"; the models of harbor 0.26,
``harbor.models.trajectories``): a run is a list of steps from ``system``, ``user`` or ``agent``;
an agent step holds the model's message, its tool calls and the observation (one result per
call, linked by ``source_call_id``). Harbor needs Python 3.12 and brings a cloud stack, so its
models are written out here, field for field, for the part twinforge writes and reads; like
Harbor's, every model forbids unknown fields, so a file written here validates with Harbor's own
models. What the observer needs beyond ATIF's fields lives in its ``extra`` objects
(docs/observer.md, "One trajectory format").
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SCHEMA_VERSION: Final = "ATIF-v1.7"
"""The version written (``ObservationResult.extra`` and ``Step.llm_call_count`` are 1.7 fields)."""
Version = Literal[
    "ATIF-v1.0", "ATIF-v1.1", "ATIF-v1.2", "ATIF-v1.3", "ATIF-v1.4", "ATIF-v1.5", "ATIF-v1.6", "ATIF-v1.7", "ATIF-v1.8"
]  # fmt: skip
_AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ContentPart(_Strict):
    """One part of a multimodal message (ATIF 1.6); twinforge reads the text parts."""

    type: Literal["text", "image", "audio"]
    text: str | None = None
    source: dict[str, Any] | None = None


class ToolCall(_Strict):
    """One tool call of an agent step."""

    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: dict[str, Any] | None = None


class ObservationResult(_Strict):
    """The result of one tool call (``source_call_id``), or of an action without a call id.

    twinforge's ``extra``: ``exit_code`` (int, when the harness reported one), ``error`` (the
    harness marked the result as an error), ``exception`` (the harness's own reason, e.g. a timeout).
    """

    source_call_id: str | None = None
    content: str | list[ContentPart] | None = None
    subagent_trajectory_ref: list[dict[str, Any]] | None = None
    extra: dict[str, Any] | None = None


class Observation(_Strict):
    """What the environment answered after a step's actions."""

    results: list[ObservationResult]


class Metrics(_Strict):
    """One model call's tokens (from the model proxy's record)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: dict[str, Any] | None = None


class Step(_Strict):
    """One step: a system or user message, or one agent turn (a model call, or a scripted command).

    twinforge's ``extra``: ``call`` (the model-call number, 1-based, format errors included),
    ``format_error`` (why the harness rejected the reply), ``submitted`` (the step ended the run
    with the completion signal), ``interrupted`` (an interrupt stopped its actions), ``observer``
    (an observer note: the intervention record), ``human`` (commands a human typed, in
    ``commands``), ``error`` (the harness's error for this reply).
    """

    step_id: int = Field(ge=1)
    timestamp: str | None = None
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: str | list[ContentPart]
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    is_copied_context: bool | None = None
    llm_call_count: int | None = Field(None, ge=0)
    extra: dict[str, Any] | None = None

    @field_validator("timestamp")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value is not None:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        return value

    @model_validator(mode="after")
    def _agent_fields(self) -> Step:
        if self.source != "agent":
            present = [name for name in _AGENT_ONLY if getattr(self, name) is not None]
            if present:
                raise ValueError(f"{present[0]} is only allowed on agent steps (source is {self.source!r})")
        return self

    @property
    def text(self) -> str:
        """The message as text (text parts joined)."""
        if isinstance(self.message, str):
            return self.message
        return "\n".join(part.text or "" for part in self.message if part.type == "text")


class Agent(_Strict):
    """The agent system: harness name and version, the model."""

    name: str
    version: str
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None
    extra: dict[str, Any] | None = None


class FinalMetrics(_Strict):
    """Totals over the run."""

    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = Field(None, ge=0)
    extra: dict[str, Any] | None = None


class AtifTrajectory(_Strict):
    """One run's trajectory.

    twinforge's ``extra``: ``harness`` (its key), ``exit_status``, ``submission`` (the agent's last
    words), ``env`` and ``cwd`` (what every command started with), ``sources`` (the files it was
    read from), ``model_calls`` (agent calls in the proxy's host-side record), ``proxy_refusals``
    (why the proxy refused calls: ``cap``, ``deadline``, ...).
    """

    schema_version: Version = SCHEMA_VERSION
    session_id: str | None = None
    trajectory_id: str | None = None
    agent: Agent
    steps: list[Step] = Field(min_length=1)
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    continued_trajectory_ref: str | None = None
    extra: dict[str, Any] | None = None
    subagent_trajectories: list[AtifTrajectory] | None = None

    @model_validator(mode="after")
    def _links(self) -> AtifTrajectory:
        for i, step in enumerate(self.steps):
            if step.step_id != i + 1:
                raise ValueError(f"steps.{i}.step_id: expected {i + 1} (sequential from 1), got {step.step_id}")
            calls = {c.tool_call_id for c in step.tool_calls or []}
            for result in step.observation.results if step.observation else []:
                if result.source_call_id is not None and result.source_call_id not in calls:
                    call = result.source_call_id
                    raise ValueError(f"steps.{i}.observation: source_call_id {call!r} is not a tool call of the step")
        return self

    def info(self, key: str, default: Any = None) -> Any:
        """A value of twinforge's trajectory ``extra``."""
        return (self.extra or {}).get(key, default)
