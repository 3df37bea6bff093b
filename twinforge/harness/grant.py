"""What one run token may do, and what it did (the proxy's accounting; docs/calibration.md, "Model proxy")."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twinforge.core.llm import Usage
from twinforge.core.settings import ModelSettings
from twinforge.harness.run_model import RunModelRecord, SettingsUsed, ShapesUsed
from twinforge.harness.shapes import Role, Shape, has_task_tool

UPSTREAM_FAILURES = frozenset({401, 403, 408, 429, *range(500, 600)})
"""Upstream statuses that end a run: a credential, rate or server failure, not an answer to the
request (a 400 such as an over-long context goes back to the harness as it is)."""


@dataclass
class RunGrant:
    """What one run token may do, and what it did.

    Attributes:
        run_id: The run.
        upstream: Where calls go (the real endpoint and model).
        cap: Agent-turn cap (40 for Mini-SWE-agent; 60 for some R8 tasks; docs/design.md).
        deadline: ``time.monotonic()`` after which calls are refused.
        extra_body: Fields merged into every upstream request (e.g. a llama.cpp ``grammar``).
        log: JSON-lines transcript of every request and response.
        refusal_status: HTTP status of a refusal: the one this harness stops on at once
            (401 for Mini-SWE-agent, OpenCode and Pi; 429 for Codex; docs/runtime.md, "Harnesses").
        side_cap: Cap on side calls (title generation, count_tokens), counted apart from agent turns.
        expects_tools: The harness offers native tools; a first agent turn without a shell tool
            makes the run UNDETERMINED (the harness was still connecting its tools).
        calls: Agent turns forwarded so far (what the cap counts).
        side_calls: Side and count_tokens calls forwarded so far.
        usage: Every recorded call so far, agent turns and side calls alike: their number, the
            tokens the upstream reported and the seconds each took (the proxy adds one call's
            usage as it records it).
        refused: Why calls were refused (``cap`` / ``side-cap`` / ``deadline`` / ``upstream`` /
            ``interrupted``), if they were.
        interrupted: The user interrupted the calibration (Ctrl-C): every later call is refused, so
            the run ends at its next model call instead of running to its budget (see :meth:`interrupt`).
        upstream_failure: What the upstream answered when it failed (``HTTP 500: ...``); from then on
            every call of the run is refused (see :meth:`fail_upstream`).
        first_tools: Tool names the first agent turn offered (``None`` before it).
        record_errors: Calls the records database could not store (they are in the transcript).
        cost_usd: US dollars the recorded calls cost at the model's ``price`` (0 without one).
        shapes: ``(harness shape, upstream shape)`` of every recorded call: which API the harness
            spoke and which the upstream answered in (they differ where the proxy translated).
    """

    run_id: str
    upstream: ModelSettings
    cap: int
    deadline: float
    extra_body: dict[str, Any] = field(default_factory=dict)
    log: Path | None = None
    refusal_status: int = 401
    side_cap: int | None = None
    expects_tools: bool = False
    calls: int = 0
    side_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    refused: str | None = None
    upstream_failure: str | None = None
    first_tools: list[str] | None = None
    record_errors: int = 0
    interrupted: bool = False
    cost_usd: float = 0.0
    shapes: set[tuple[Shape, Shape]] = field(default_factory=set)
    seq: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    log_lock: threading.Lock = field(default_factory=threading.Lock)
    refused_event: threading.Event = field(default_factory=threading.Event)

    def admit(self, role: Role, tools: list[str]) -> tuple[int, str | None, str]:
        """Count one call of ``role`` (under the lock); returns ``(sequence number, refusal reason or None, message)``.

        A refused call is not counted: a harness that retries a refusal does not use up its budget.
        """
        with self.lock:
            self.seq += 1
            if self.interrupted:
                return self._refuse("interrupted", f"run {self.run_id} was interrupted by the user")
            if self.upstream_failure is not None:
                return self._refuse("upstream", f"the model upstream failed earlier in run {self.run_id}")
            if time.monotonic() >= self.deadline:
                return self._refuse("deadline", f"time budget of run {self.run_id} is used up")
            if role == "agent":
                if self.calls >= self.cap:
                    return self._refuse("cap", f"model-call cap of {self.cap} reached for run {self.run_id}")
                self.calls += 1
                if self.first_tools is None:
                    self.first_tools = list(tools)
            else:
                limit = self.side_cap if self.side_cap is not None else self.cap
                if self.side_calls >= limit:
                    return self._refuse("side-cap", f"side-call cap of {limit} reached for run {self.run_id}")
                self.side_calls += 1
            return self.seq, None, ""

    def renew(self, seconds: float) -> None:
        """A later user turn starts: a fresh wall-clock budget of ``seconds`` from now.

        The call cap stays per run (docs/design.md, "Execution and outcomes": 900 s per user turn,
        Mini-SWE-agent's 40 calls per run).
        """
        with self.lock:
            self.deadline = time.monotonic() + seconds

    def interrupt(self) -> None:
        """The user stopped the calibration: refuse every later call with the harness's stop status.

        The harness ends the run at its next model call (the call in flight finishes), the detector
        still judges the state, and the job stores verified harm or goal or puts the run back to
        pending (``twinforge.runs.jobs``; docs/calibration.md, "Interrupting a calibration").
        """
        with self.lock:
            self.interrupted = True

    def fail_upstream(self, status: int, detail: str) -> str:
        """The upstream failed (``status`` is one of :data:`UPSTREAM_FAILURES`): the run ends here.

        Every later call is refused with the harness's stop status, so no harness retries for minutes
        (Claude Code retries 401, 429 and 500 for about 180 s; Codex retries 500 thirty times; OpenCode
        retries 429 and 500 for about 95 s: the harness kit's measurements, docs/runtime.md) and no
        harness gets more tries than another. The run is then UNDETERMINED with this cause unless
        the detector found harm or the goal (docs/calibration.md, "Model proxy").

        Returns:
            The message the harness gets.
        """
        with self.lock:
            if time.monotonic() >= self.deadline:  # a time-out at the run's deadline is the deadline's
                self._refuse("deadline", "")
                return f"time budget of run {self.run_id} is used up"
            self.upstream_failure = self.upstream_failure or f"HTTP {status}: {detail}"[:300]
            self._refuse("upstream", "")
        return f"the model upstream failed ({self.upstream_failure}); run {self.run_id} ends"

    def _refuse(self, why: str, message: str) -> tuple[int, str, str]:
        self.refused = self.refused or why
        self.refused_event.set()
        return self.seq, why, message

    def summary(self) -> RunModelRecord:
        """What the run used of its model, for its record (``model.json``; docs/runtime.md, "Model channel").

        The model block's settings (temperature, reply budget, reasoning, price), the API shapes the
        calls went in, and the tokens and cost of every recorded call.
        """
        settings = self.upstream
        with self.lock:
            usage, cost, shapes = self.usage, self.cost_usd, sorted(self.shapes)
        return RunModelRecord(
            run_id=self.run_id,
            model=settings.model,
            provider=settings.provider,
            settings=SettingsUsed(
                temperature=settings.temperature,
                max_tokens=settings.max_tokens,
                reasoning_effort=settings.reasoning_effort,
                thinking_budget=settings.thinking_budget,
                harness_api=settings.harness_api(),
                served_shapes=settings.served_shapes(),
                price=settings.price,
            ),
            shapes=[ShapesUsed(harness=h, upstream=u) for h, u in shapes],
            usage=usage,
            cost_usd=round(cost, 8) if settings.price else None,
            calls=self.calls,
            side_calls=self.side_calls,
        )

    @property
    def remaining_s(self) -> float:
        """Seconds left before the deadline."""
        return self.deadline - time.monotonic()

    @property
    def no_task_tools(self) -> str | None:
        """Why the run cannot be judged safe: its first agent turn offered no shell tool (``None`` when fine)."""
        if not self.expects_tools or self.first_tools is None or has_task_tool(self.first_tools):
            return None
        shown = ", ".join(self.first_tools[:8]) or "none"
        return f"harness: the first model call offered the agent no task tools (tools: {shown})"
