"""What the pages show and the JSON API returns: one typed model per page (docs/viewer.md, "JSON API").

The HTML templates render these models and ``/api/...`` returns them dumped in JSON mode, so a page
and its API answer never disagree. Text in them is as the agent, the model or a person wrote it;
the templates escape all of it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunItem(_View):
    """One run in a list (a row of the records).

    Attributes:
        run_id: The run id (evidence under ``runs/<run-id>/``).
        purpose: ``calibration`` or ``evaluation``.
        pair: Pair id.
        side: ``risk`` or ``twin``.
        k: Repetition, 1-based.
        model: ``provider:model``.
        harness: Harness key.
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
    """

    run_id: str
    purpose: str
    pair: str
    side: str
    k: int
    model: str
    harness: str
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


class RunList(_View):
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


class CallView(_View):
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


class CommandView(_View):
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


class InterventionView(_View):
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


class StepView(_View):
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


class VerdictView(_View):
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


class RunView(_View):
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


class CallDetail(_View):
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


class FileEntry(_View):
    """One file or folder of a pair side, with the trap and safety-cue marks pair.yaml declares.

    Attributes:
        path: Relative to the side folder.
        is_dir: A folder.
        marks: ``trap`` and/or ``safety cue``.
        differs: The same path on the other side has other content (or is missing).
    """

    path: str
    is_dir: bool
    marks: list[str] = Field(default_factory=list)
    differs: bool = False


class DiffFile(_View):
    """One file where risk and twin differ.

    Attributes:
        path: Relative to the side folder.
        change: ``changed``, ``risk only`` or ``twin only``.
        diff: A unified diff (text files) or a one-line note (binary or large files).
    """

    path: str
    change: str
    diff: str


class CheckView(_View):
    """One gate check.

    Attributes:
        name: What was checked.
        passed: It held.
        detail: Evidence.
    """

    name: str
    passed: bool
    detail: str = ""


class CheatView(_View):
    """One cheat-battery outcome (cheat x side).

    Attributes:
        cheat: Cheat id.
        side: Side.
        expect_harmful: The pair lists this cheat as its harm.
        harmful: Detector's harmful.
        completed: Detector's completed.
        outcome: The run's outcome.
        held: The detector was not fooled.
        note: Why, in one line.
    """

    cheat: str
    side: str
    expect_harmful: bool
    harmful: bool | None
    completed: bool | None
    outcome: str
    held: bool
    note: str


class GateView(_View):
    """The last gate report of a pair.

    Attributes:
        source: Where it was read from (the stored gate report or the implementer record).
        passed: Every check passed.
        at: When the gate ran.
        digest: The pair digest it ran on.
        checks: The checks.
        battery: The cheat battery table.
    """

    source: str
    passed: bool
    at: datetime | None = None
    digest: str = ""
    checks: list[CheckView] = Field(default_factory=list)
    battery: list[CheatView] = Field(default_factory=list)


class Commit(_View):
    """One commit of the workspace's git log touching a pair or blueprint.

    Attributes:
        sha: Short hash.
        at: Commit time.
        author: Author name.
        message: First line of the message.
    """

    sha: str
    at: datetime
    author: str
    message: str


class PairItem(_View):
    """One pair in the pair list.

    Attributes:
        id: Pair id.
        title: Title.
        cell: Taxonomy cell.
        blueprint_id: Its blueprint.
        blueprint_file: The workspace holds that blueprint's file (a reference pair's may be elsewhere).
        validated: Last gate passed (``None``: never validated in this workspace).
        calibration: Calibration passed (``None``: no calibration record).
        admitted: In ``benchmark.yaml``.
        runs: Finished runs in the records.
        problem: Why the pair does not load, when it does not.
    """

    id: str
    title: str = ""
    cell: str = ""
    blueprint_id: str = ""
    blueprint_file: bool = False
    validated: bool | None = None
    calibration: bool | None = None
    admitted: bool = False
    runs: int = 0
    problem: str = ""


class PairView(_View):
    """``/api/pairs/<pair-id>``: everything the pair page shows.

    Attributes:
        pair: The list item.
        blueprint: The eight fields carried in pair.yaml.
        provenance: Where the pair came from.
        trap: Where the trap lives (``path: marker``).
        safety_cue: Where the safety cue lives.
        files: File tree per side.
        diff: Where risk and twin differ.
        gate: The last gate report.
        implementation: The Stage II record (``implementation/<blueprint-id>.yaml``) without its gate
            checks: mode, outcome, rounds, calls, the observer's interventions and recoveries.
        digest: The pair digest now.
        validated_digest: The digest the last gate run recorded.
        calibration: The calibration record (``calibration/<pair>.yaml``).
        admission: The ``benchmark.yaml`` entry.
        history: Commits touching the pair or its blueprint, newest first.
        runs: Its finished runs.
        compare: Risk-vs-twin pairs of run ids (same purpose, model, harness, k).
    """

    pair: PairItem
    blueprint: dict[str, str] = Field(default_factory=dict)
    provenance: dict[str, str] = Field(default_factory=dict)
    trap: list[str] = Field(default_factory=list)
    safety_cue: list[str] = Field(default_factory=list)
    files: dict[str, list[FileEntry]] = Field(default_factory=dict)
    diff: list[DiffFile] = Field(default_factory=list)
    gate: GateView | None = None
    implementation: dict[str, Any] | None = None
    digest: str = ""
    validated_digest: str = ""
    calibration: dict[str, Any] | None = None
    admission: dict[str, Any] | None = None
    history: list[Commit] = Field(default_factory=list)
    runs: list[RunItem] = Field(default_factory=list)
    compare: list[tuple[str, str]] = Field(default_factory=list)


class BlueprintView(_View):
    """``/api/blueprints/<id>``: one blueprint record and the pairs built from it.

    Attributes:
        id: Blueprint id.
        record: The whole record as stored (8 fields, provenance, review, decisions, notes, edits).
        pairs: Pair ids whose pair.yaml names this blueprint.
        history: Commits touching the blueprint file, newest first.
        problem: Why the file does not validate, when it does not.
    """

    id: str
    record: dict[str, Any] | None = None
    pairs: list[str] = Field(default_factory=list)
    history: list[Commit] = Field(default_factory=list)
    problem: str = ""


class MetricsView(_View):
    """CAP and ASR@1..k of a group (calibration/metrics.py ``Metrics``), with the runs behind it.

    Attributes:
        label: Group name (``pooled``, ``R3``, ``S2``).
        pairs: Pairs in the group.
        eligible: |E|.
        cap: CAP in [0, 1].
        asr: ASR@1..k in [0, 1]; empty when E is empty.
        compromised: Verified ASR@1..k.
        undetermined: Eligible pairs whose ASR rests on UNDETERMINED runs.
        runs: Query parameters of the run list behind this cell.
    """

    label: str
    pairs: int
    eligible: int
    cap: float
    asr: list[float]
    compromised: list[float]
    undetermined: int
    runs: dict[str, str]


class SectionView(_View):
    """One table of the report: calibration, or one evaluated model x harness.

    Attributes:
        key: Stable id of the section (its page: ``/sections/<key>``).
        title: ``Calibration: model / harness``.
        purpose: ``calibration`` or ``evaluation``.
        model: Model.
        harness: Harness key.
        k: Runs per side the metrics use.
        rows: Pooled, then per risk category, then per source.
    """

    key: str
    title: str
    purpose: str
    model: str
    harness: str
    k: int
    rows: list[MetricsView]


class Look(_View):
    """A pair that needs a look.

    Attributes:
        pair: Pair id ('' when the finding is not about one pair).
        kind: ``stand-in``, ``disagreement``, ``undetermined``, ``calibration failed``, ``unreadable``.
        detail: What was found.
        run_id: The run it is about, if one.
    """

    pair: str
    kind: str
    detail: str
    run_id: str = ""


class Overview(_View):
    """``/api/overview``: the overview page.

    Attributes:
        workspace: The workspace folder's name.
        counts: Blueprints per status.
        coverage: Risk id -> source id -> blueprints in that cell.
        sources: Source ids in taxonomy order.
        invalid_blueprints: Blueprint files that do not validate (path -> problem).
        pairs: Task pairs in ``tasks/``.
        admitted: Admitted pair ids, with the calibration model and whether it was a stand-in.
        sections: The report's tables.
        looks: Pairs that need a look.
        runs: Finished runs in the records.
        plots: Report plot file names present under ``runs/report/``.
        computed_at: When the tables were computed (they are recomputed when the records change).
        refreshing: The records changed since; new tables are being computed.
    """

    workspace: str
    counts: dict[str, int]
    coverage: dict[str, dict[str, int]]
    sources: list[str]
    invalid_blueprints: dict[str, str] = Field(default_factory=dict)
    pairs: int = 0
    admitted: list[dict[str, Any]] = Field(default_factory=list)
    sections: list[SectionView] = Field(default_factory=list)
    looks: list[Look] = Field(default_factory=list)
    runs: int = 0
    plots: list[str] = Field(default_factory=list)
    computed_at: datetime | None = None
    refreshing: bool = False
