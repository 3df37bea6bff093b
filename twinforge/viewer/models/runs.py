"""The run pages' models: run lists, the timeline (calls, reasoning, commands, interventions), the verdict."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from twinforge.viewer.models.base import View


class RunItem(View):
    """One run in a list (a row of the records).

    Attributes:
        run_id: The run id (evidence under ``runs/<run-id>/``).
        purpose: ``calibration``, ``evaluation`` or ``scripted``.
        pair: Pair id.
        side: ``risk`` or ``twin``.
        k: Repetition, 1-based.
        model: ``provider:model``.
        harness: Harness key, ``name@version:mode`` (docs/calibration.md, "Harnesses").
        harness_version: The harness's version ('' when the record does not say).
        harness_mode: Its permission mode: ``bypass`` (the study's) or a strict one ('' when not said).
        risk: Risk category id.
        source: Attack source id.
        outcome: The stored outcome.
        calls: Model calls forwarded by the proxy.
        prompt_tokens: Prompt tokens over the run.
        completion_tokens: Completion tokens over the run.
        seconds: Wall time of the run.
        exit_status: The harness's exit status.
        finished_at: When its outcome was stored.
        flags: Disagreement flags and the diagnosis label, if any.
        cost_usd: US dollars its model calls cost at the model's price (``None``: no price, or a
            record of an earlier release; docs/runtime.md, "Model channel").
    """

    run_id: str
    purpose: str
    pair: str
    side: str
    k: int
    model: str
    harness: str
    harness_version: str = ""
    harness_mode: str = ""
    risk: str
    source: str
    outcome: str | None
    calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    exit_status: str | None = None
    finished_at: datetime | None = None
    flags: list[str] = Field(default_factory=list)
    cost_usd: float | None = None


class RunList(View):
    """``/api/runs``: one page of a filtered run list.

    Attributes:
        filter: The query parameters in force.
        total: Runs matching.
        page: 1-based page.
        pages: Number of pages.
        per_page: Page size.
        runs: The page's runs, newest first.
    """

    filter: dict[str, str]
    total: int
    page: int
    pages: int
    per_page: int
    runs: list[RunItem]


class CallView(View):
    """One model call from the proxy transcript (``runs/<run-id>/proxy.jsonl``).

    Attributes:
        n: 1-based call number.
        status: HTTP status the proxy answered with.
        seconds: Latency of the upstream call.
        prompt_tokens: Prompt tokens.
        completion_tokens: Completion tokens.
        refused: Why the proxy refused it (``cap`` / ``deadline``).
        error: What went wrong upstream.
        reply: The reply's text (assistant content), as the model wrote it.
        messages: Messages in the request.
        shape: The API shape the harness spoke; ``upstream_shape``: the one the upstream answered
            in (another where the proxy translated).
        cost_usd: US dollars the call cost at the model's price (``None`` without one).
    """

    n: int
    status: int
    seconds: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    refused: str | None = None
    error: str | None = None
    reply: str = ""
    messages: int = 0
    shape: str = ""
    upstream_shape: str = ""
    cost_usd: float | None = None


class CommandView(View):
    """One command as the host recorded it (``agent/commands.jsonl``; the agent cannot edit it).

    Attributes:
        command: The shell command.
        exit_code: Its exit code.
        killed: Its process tree was killed at the command timeout.
        seconds: Its wall time.
        output: The tail of what it printed (the last 64 KiB).
        output_bytes: Bytes it printed in all.
        lines: Lines in ``output``.
    """

    command: str
    exit_code: int | None = None
    killed: bool = False
    seconds: float = 0.0
    output: str = ""
    output_bytes: int = 0
    lines: int = 0


class InterventionView(View):
    """One observer intervention (the trajectory's ``info.observer``).

    Attributes:
        key: ``class/kind`` of the misbehaviour.
        level: ``nudge``, ``plan`` or ``stop``.
        at_step: The step boundary it was delivered at.
        text: The injected guidance.
        recovered: The misbehaviour did not recur and the model answered (``None``: not recorded).
    """

    key: str = ""
    level: str = ""
    at_step: int = 0
    text: str = ""
    recovered: bool | None = None


class StepView(View):
    """One step of the timeline: a model call, the agent's reasoning, its commands.

    Attributes:
        n: 1-based step number.
        call: The model call of this step (matched by number), if recorded.
        thought: The agent's reasoning (the reply text the harness kept).
        format_error: Why the harness rejected the reply.
        commands: The step's commands with their host-side records.
        interventions: Observer interventions delivered after this step.
    """

    n: int
    call: CallView | None = None
    thought: str = ""
    format_error: str = ""
    commands: list[CommandView] = Field(default_factory=list)
    interventions: list[InterventionView] = Field(default_factory=list)


class VerdictView(View):
    """The detector's verdict and the rule that turned it into the outcome.

    Attributes:
        harmful: A prohibited effect happened (``None``: no verdict).
        completed: The authorised goal was reached (``None``: no verdict).
        evidence: The verdict's evidence lines.
        oracles: Hidden oracle records.
        detector_error: Why there was no verdict.
        outcome: The stored outcome.
        rule: The outcome rule that decided it (taskpair/format/outcomes.py ``decide``).
        recomputed: The outcome the rule gives on the stored verdict; differs from ``outcome`` only
            when the records and the evidence disagree.
    """

    harmful: bool | None = None
    completed: bool | None = None
    evidence: list[str] = Field(default_factory=list)
    oracles: list[dict[str, Any]] = Field(default_factory=list)
    detector_error: str | None = None
    outcome: str | None = None
    rule: str = ""
    recomputed: str | None = None


class RunView(View):
    """``/api/runs/<run-id>``: everything the run page shows.

    Attributes:
        run: The record.
        instruction: The user prompt of the side (from the pair folder).
        instruction_note: Why the instruction may not be the one the run had (the pair changed).
        steps: The timeline.
        extra_commands: Host-recorded commands no trajectory step names (shown after the steps).
        final_message: The agent's final message (host-written).
        verdict: Detector verdict, outcome and rule.
        disagreements: Detector / trajectory disagreement flags (``kind: detail``).
        diagnosis: Why a twin was not CAPABLE, with its findings.
        budgets: The run's budgets.
        refused: Why the proxy refused calls, if it did.
        timings: Seconds per phase.
        error: The run's stored error (cause of UNDETERMINED).
        problems: Evidence that could not be read (file and reason).
        turns: The run's user turns (sent or not, calls, commands, the detector at each boundary).
        harm_turn: The turn in which harm first showed.
    """

    run: RunItem
    instruction: str = ""
    instruction_note: str = ""
    steps: list[StepView] = Field(default_factory=list)
    extra_commands: list[CommandView] = Field(default_factory=list)
    final_message: str = ""
    verdict: VerdictView
    disagreements: list[str] = Field(default_factory=list)
    diagnosis: dict[str, Any] | None = None
    budgets: dict[str, Any] | None = None
    refused: str | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    error: str | None = None
    problems: list[str] = Field(default_factory=list)
    turns: list[dict[str, Any]] = Field(default_factory=list)
    harm_turn: int | None = None


class CallDetail(View):
    """``/api/runs/<run-id>/calls/<n>``: one model call's raw request and response.

    Attributes:
        run_id: The run.
        call: The call's summary.
        request: The raw request body, pretty-printed JSON.
        response: The raw response body, pretty-printed JSON.
    """

    run_id: str
    call: CallView
    request: str
    response: str
