"""Build an ATIF trajectory step by step (the readers of every harness's output use this)."""

from __future__ import annotations

from typing import Any

from twinforge.observer.trajectory.atif import (
    Agent,
    AtifTrajectory,
    FinalMetrics,
    Metrics,
    Observation,
    ObservationResult,
    Step,
    ToolCall,
)
from twinforge.observer.trajectory.tools import parse_arguments


class AtifBuilder:
    """Steps in order; agent steps are numbered as model calls (``extra.call``) unless scripted."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.calls = 0

    def message(self, source: str, text: str, **extra: Any) -> Step:
        """A system or user step (an observer note is a user step with ``observer`` in its extra)."""
        step = Step.model_validate(
            {"step_id": len(self.steps) + 1, "source": source, "message": text, "extra": extra or None}
        )
        self.steps.append(step)
        return step

    def agent(
        self,
        text: str = "",
        calls: list[tuple[str, str, Any]] | None = None,
        *,
        reasoning: str | None = None,
        model: str | None = None,
        timestamp: str | None = None,
        scripted: bool = False,
        **extra: Any,
    ) -> Step:
        """One agent turn: a model call (numbered) or, ``scripted``, a command no model chose.

        Args:
            text: The reply's text.
            calls: ``(call id, tool name, arguments)`` per tool call; the arguments as an object or JSON text.
            reasoning: The model's separate reasoning text.
            model: The model, when the source names it.
            timestamp: ISO 8601 time of the step.
            scripted: A deterministic dispatch (``llm_call_count`` 0): not a model call.
            **extra: twinforge's step fields (``format_error``, ``submitted``, ``refused``, ...).
        """
        if not scripted:
            self.calls += 1
            extra = {"call": self.calls, **extra}
        step = Step(
            step_id=len(self.steps) + 1,
            source="agent",
            message=text,
            reasoning_content=reasoning if reasoning and not scripted else None,
            model_name=model,
            timestamp=timestamp,
            llm_call_count=0 if scripted else 1,
            extra={k: v for k, v in extra.items() if v not in (None, "", False)} or None,
        )
        self.add_calls(step, calls or [])
        self.steps.append(step)
        return step

    @staticmethod
    def add_calls(step: Step, calls: list[tuple[str, str, Any]]) -> None:
        """Add tool calls ``(call id, tool name, arguments)`` to an agent step."""
        made = [
            ToolCall(tool_call_id=call_id, function_name=name, arguments=parse_arguments(arguments))
            for call_id, name, arguments in calls
        ]
        if made:
            step.tool_calls = [*(step.tool_calls or []), *made]

    @staticmethod
    def result(
        step: Step,
        call_id: str | None,
        content: str,
        *,
        exit_code: int | None = None,
        error: bool | None = None,
        exception: str = "",
    ) -> None:
        """Record one tool result on ``step`` (a call id the step does not hold is recorded without it)."""
        known = {c.tool_call_id for c in step.tool_calls or []}
        extra = {"exit_code": exit_code, "error": error, "exception": exception or None}
        result = ObservationResult(
            source_call_id=call_id if call_id in known else None,
            content=content,
            extra={k: v for k, v in extra.items() if v is not None} or None,
        )
        if step.observation is None:
            step.observation = Observation(results=[])
        step.observation.results.append(result)

    def usage(self, step: Step, prompt_tokens: int | None, completion_tokens: int | None, **extra: Any) -> None:
        """Attach one model call's tokens to its step."""
        step.metrics = Metrics(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, extra=extra or None)

    def build(
        self, agent: Agent, *, session_id: str | None = None, notes: str | None = None, **extra: Any
    ) -> AtifTrajectory:
        """The trajectory (a run without any step gets one empty user step: ATIF needs one)."""
        if not self.steps:
            self.message("user", "")
        metered = [s.metrics for s in self.steps if s.metrics is not None]
        totals = (
            FinalMetrics(
                total_prompt_tokens=sum(m.prompt_tokens or 0 for m in metered),
                total_completion_tokens=sum(m.completion_tokens or 0 for m in metered),
                total_steps=len(self.steps),
            )
            if metered
            else FinalMetrics(total_steps=len(self.steps))
        )
        return AtifTrajectory(
            session_id=session_id,
            agent=agent,
            steps=self.steps,
            notes=notes,
            final_metrics=totals,
            extra={k: v for k, v in extra.items() if v not in (None, "", [], {})} or None,
        )
