"""Typed calibration results, written and read by the same classes (docs/calibration.md).

- :class:`HarnessChoice`: the harness of a campaign (name, version, mode, action options);
- :class:`RunDetail`: the ``detail`` column of a run record;
- :class:`RunSummary`: what one executed run reports back to the caller;
- :class:`CalibrationRecord`: ``calibration/<pair>.yaml`` in the workspace, the evidence admission uses;
- :class:`AdmissionEntry` / :class:`Benchmark`: ``benchmark.yaml``, carrying each admitted pair's whole
  calibration record.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from twinforge.core.llm import describe_validation_error
from twinforge.core.workspace import Workspace
from twinforge.harness.naming import HarnessSpec
from twinforge.harness.registry import adapter_of, make_harness
from twinforge.harness.run_model import RunModelRecord
from twinforge.runs.budgets import Budgets
from twinforge.runs.exceptions import RunsError
from twinforge.taskpair import Outcome
from twinforge.taskpair.format.spec import AgentBudget
from twinforge.taskpair.runtime.turn_records import TurnRecord

Side = Literal["risk", "twin"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Disagreement(_Model):
    """A run where the detector and the trajectory disagree (docs/calibration.md, "Disagreement flags").

    The state measurement stands; the flag asks a person to look at the detector.

    Attributes:
        kind: ``touched-no-harm`` (a command touched the trap's target, no harm found) or
            ``harm-no-command`` (harm found, no command that could cause it).
        detail: What was seen (the command, the target).
    """

    kind: Literal["touched-no-harm", "harm-no-command"]
    detail: str


class Diagnosis(_Model):
    """Why a twin run was not CAPABLE (trajectory diagnostics: loop, tool failure, refusal, drift, none).

    Attributes:
        label: The observer's main finding.
        findings: The first findings, with steps.
        cause: The twin's cause (docs/observer.md, "Why a twin was not CAPABLE": ``refused``, ``loop``,
            ``tool_failures``, ``out_of_time``, ``out_of_calls``, ``gave_up``, ``wrong_result``,
            ``no_verdict``); ``None`` in records of an earlier release.
        cause_evidence: What shows the cause, quoted briefly.
        cause_steps: The steps that show it (1-based).
    """

    label: str
    findings: list[dict[str, object]] = Field(default_factory=list)
    cause: str | None = None
    cause_evidence: str = ""
    cause_steps: list[int] = Field(default_factory=list)


class HarnessChoice(_Model):
    """The harness a campaign runs and the options that change its behaviour (part of the run key).

    Attributes:
        name: Harness adapter name, e.g. ``mini-swe-agent``.
        version: Its version (``None``: the adapter's default, the pinned or installed one).
        mode: Its permission mode (``None``: the adapter's default, ``bypass``).
        action_mode: Mini-SWE-agent's action format (``text`` / ``toolcall``).
        grammar: Whether the llama.cpp action grammar is sent.
    """

    name: str
    version: str | None = None
    mode: str | None = None
    action_mode: Literal["text", "toolcall"] = "text"
    grammar: bool = False

    @classmethod
    def of(
        cls, spec: HarnessSpec, action_mode: Literal["text", "toolcall"] = "text", grammar: bool = False
    ) -> HarnessChoice:
        """The choice of a harness spec with the model block's action options."""
        return cls(name=spec.name, version=spec.version, mode=spec.mode, action_mode=action_mode, grammar=grammar)

    @property
    def spec(self) -> HarnessSpec:
        """Name, version and mode with the adapter's defaults filled in.

        Raises:
            HarnessError: Unknown name, mode or version.
        """
        found = HarnessSpec.default(self.name)
        return HarnessSpec(name=found.name, version=self.version or found.version, mode=self.mode or found.mode)

    @property
    def call_cap(self) -> bool:
        """The harness has a model-call cap (Mini-SWE-agent; docs/calibration.md, "Budgets")."""
        return adapter_of(self.name).call_cap

    def key(self) -> str:
        """The ``harness`` of a run record: ``name@version:mode``, Mini-SWE-agent's action options after it.

        ``codex@0.146.0:workspace-write``, ``mini-swe-agent@2.4.6:bypass[text,grammar]`` (docs/calibration.md,
        "Harnesses").
        """
        return make_harness(self.name, **self.options()).key

    def options(self) -> dict[str, object]:
        """Keyword options of :func:`twinforge.harness.make_harness`."""
        spec = self.spec
        return {
            "action_mode": self.action_mode,
            "grammar": self.grammar,
            "version": spec.version,
            "permission": spec.mode,
        }

    def budgets(self, agent: AgentBudget, max_calls: int | None = None) -> Budgets:
        """A side's budgets on this harness: the call cap only where the harness has one."""
        return Budgets.of(agent, max_calls, call_cap=self.call_cap)


class RunDetail(_Model):
    """The ``detail`` column of a finished run record.

    Attributes:
        refused: Why the proxy refused calls (``cap`` / ``side-cap`` / ``deadline`` / ``upstream``), if it did.
        budgets: The budgets of the run.
        harness: The harness's name, version and mode (``None`` in records of an earlier release).
        failure: Why the run shows nothing about the agent (the model never answered, an upstream
            failure, no task tools), which makes it UNDETERMINED short of harm or the goal; kept so
            a re-judgement applies it again (``None``: none).
        evidence: The detector's first evidence lines.
        diagnosis: Trajectory diagnosis of a twin run that was not CAPABLE.
        disagreements: Detector / trajectory disagreement flags.
        turns: The run's user turns (start, end, model calls, commands, the detector at each
            boundary, why a turn was not sent; docs/runtime.md, "User turns").
        harm_turn: The turn in which harm first showed (``None`` unless the verdict is harmful).
        model_use: What the run's model calls used: the model block's settings, the API shapes
            (harness -> upstream), prompt, cached and completion tokens and the cost in US dollars
            (``None`` without a price); the run's ``model.json`` (docs/runtime.md, "Model channel").
            ``None`` in records of an earlier release.
    """

    refused: str | None = None
    budgets: Budgets
    harness: HarnessSpec | None = None
    failure: str | None = None
    evidence: list[str] = Field(default_factory=list)
    diagnosis: Diagnosis | None = None
    disagreements: list[Disagreement] = Field(default_factory=list)
    turns: list[TurnRecord] = Field(default_factory=list)
    harm_turn: int | None = None
    model_use: RunModelRecord | None = None


class FinishedRun(_Model):
    """What a finished run stores on its row (:meth:`twinforge.runs.records.RecordsDB.finish`).

    Written by ``RecordsDB.finish`` and read back by ``RunRow.finished``: the one shape of a stored run.

    Attributes:
        run_id: The run (evidence under ``runs/<run-id>/``).
        outcome: The outcome of its newest verdict.
        harmful: The verdict's ``harmful`` (``None`` without a verdict).
        completed: The verdict's ``completed``.
        exit_status: The harness's exit status.
        calls: Model calls forwarded by the proxy.
        prompt_tokens: Prompt tokens over those calls.
        completion_tokens: Completion tokens over those calls.
        seconds: Wall-clock seconds of the whole run (setup to teardown).
        evidence_dir: Where the evidence lives.
        trajectory: The harness's trajectory file.
        error: Why there is no verdict, or what failed after it (e.g. teardown).
        detector_digest: Digest of the detector that gave the verdict (docs/calibration.md,
            "Lifecycle and digests").
        detail: Budgets, evidence lines, diagnosis, disagreement flags.
    """

    run_id: str
    outcome: Outcome
    harmful: bool | None = None
    completed: bool | None = None
    exit_status: str = ""
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    evidence_dir: str | None = None
    trajectory: str | None = None
    error: str | None = None
    detector_digest: str = ""
    detail: RunDetail | None = None


class RunSummary(_Model):
    """What one job reports back (printed as runs finish).

    Attributes:
        run_id: The run (empty when it was not executed here).
        pair: Pair id.
        side: Which side.
        k: Repetition.
        outcome: The stored outcome, ``None`` when not executed here.
        calls: Model calls forwarded.
        exit_status: The harness's exit status.
        diagnosis: Diagnosis label of a twin that was not CAPABLE.
        disagreements: Disagreement flags.
        skipped: Why the run was not executed here (claimed by another live process).
        cost_usd: US dollars its model calls cost (``None`` without a price): what a Ray driver
            adds to the command's spend meter (docs/runtime.md, "Spend ceiling").
    """

    run_id: str = ""
    pair: str
    side: Side
    k: int
    outcome: Outcome | None = None
    calls: int = 0
    exit_status: str = ""
    diagnosis: str | None = None
    disagreements: list[Disagreement] = Field(default_factory=list)
    skipped: str | None = None
    cost_usd: float | None = None


class CalibrationModel(_Model):
    """Which model and settings calibration ran with (docs/calibration.md, "Calibration presets").

    Attributes:
        label: ``provider:model`` as keyed in the run records.
        preset: The preset name from ``[calibration] preset``, if any.
        reference: The preset is the design's reference calibration model; otherwise the pair was
            calibrated with a stand-in (e.g. the embedded model) and is flagged as such.
        action_mode: Mini-SWE-agent action format (``text`` / ``toolcall``).
        grammar: Whether the llama.cpp action grammar was sent.
        temperature: Sampling temperature.
        max_tokens: Completion cap per call.
    """

    label: str
    preset: str | None = None
    reference: bool = False
    action_mode: str
    grammar: bool
    temperature: float
    max_tokens: int

    @property
    def stand_in(self) -> bool:
        """Calibrated with a model other than a reference preset."""
        return not self.reference


class CalibrationRecord(_Model):
    """``calibration/<pair>.yaml``: the verdict of one pair with everything it rests on.

    Attributes:
        schema_version: File format version.
        pair: Pair id.
        path: Pair folder, relative to the workspace.
        digest: The pair digest the runs were made on (the validated one).
        passed: Twin CAPABLE in all K runs and risk COMPROMISED in at least one.
        reason: One line explaining the verdict.
        k: K.
        model: The calibration model and its settings.
        harness: Harness key (name and action options), as in the run records.
        budgets: Budgets per side (incl. any call cap below the task's, e.g. the demo's 12 calls).
        risk: Outcomes of the K risk runs, by k.
        twin: Outcomes of the K twin runs, by k.
        runs: Run ids (evidence under ``runs/<run-id>/``).
        undetermined: Runs without a valid verdict (``side k=n: cause``), listed apart.
        twin_diagnosis: Why twin runs were not CAPABLE (``k=n: label``).
        disagreements: Detector / trajectory disagreements (``side k=n: kind: detail``).
        at: When the verdict was written.
    """

    schema_version: Literal[1] = 1
    pair: str
    path: str
    digest: str
    passed: bool
    reason: str
    k: int
    model: CalibrationModel
    harness: str
    budgets: dict[Side, Budgets]
    risk: list[Outcome | None]
    twin: list[Outcome | None]
    runs: list[str] = Field(default_factory=list)
    undetermined: list[str] = Field(default_factory=list)
    twin_diagnosis: list[str] = Field(default_factory=list)
    disagreements: list[str] = Field(default_factory=list)
    at: datetime

    @staticmethod
    def relpath(pair_id: str) -> str:
        """Where the record lives in the workspace."""
        return f"calibration/{pair_id}.yaml"

    def write(self, workspace: Workspace) -> Path:
        """Write atomically (not committed)."""
        text = yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False, width=100)
        return workspace.write(self.relpath(self.pair), text)

    @classmethod
    def read(cls, workspace: Workspace, pair_id: str) -> CalibrationRecord:
        """Read a pair's record.

        Raises:
            RunsError: Missing (never calibrated here) or invalid (the error names the field).
        """
        return cls.parse(workspace.root / cls.relpath(pair_id))

    @classmethod
    def parse(cls, path: Path) -> CalibrationRecord:
        """Read a record file.

        Raises:
            RunsError: Missing or invalid (the error names the file and the field).
        """
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise RunsError(f"{path.stem} has no calibration record; run `twinforge calibrate` first") from exc
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise RunsError(f"{path}: not valid YAML: {exc}") from exc
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise RunsError(f"{path}: " + "; ".join(describe_validation_error(exc))) from exc

    @classmethod
    def all(cls, workspace: Workspace) -> list[CalibrationRecord]:
        """Every record in ``calibration/``, by pair id (invalid files raise)."""
        folder = workspace.root / "calibration"
        return [cls.parse(p) for p in sorted(folder.glob("*.yaml"))] if folder.is_dir() else []


class AdmissionEntry(_Model):
    """One admitted pair in ``benchmark.yaml``.

    Attributes:
        id: Pair id.
        path: Pair folder, relative to the workspace.
        version: The pair digest admitted (equal to the calibrated and validated digest).
        calibration_model: ``label`` of the calibration model it passed (or was justified) with.
        stand_in: Calibrated with a stand-in rather than a reference calibration model.
        calibration: The whole calibration record at admission time.
        admitted_by: Who admitted it.
        admitted_at: When.
        justification: Why a pair that failed calibration is kept.
    """

    id: str
    path: str
    version: str
    calibration_model: str
    stand_in: bool
    calibration: CalibrationRecord
    admitted_by: str
    admitted_at: datetime
    justification: str | None = None


class Benchmark(_Model):
    """``benchmark.yaml``: the admitted set."""

    schema_version: Literal[1] = 1
    pairs: list[AdmissionEntry] = Field(default_factory=list)

    @classmethod
    def read(cls, workspace: Workspace) -> Benchmark:
        """Read the workspace's ``benchmark.yaml`` (missing or empty: nothing admitted yet).

        Raises:
            RunsError: Not valid YAML, or an entry does not validate (the error names the field).
        """
        path = workspace.root / "benchmark.yaml"
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise RunsError(f"{path}: not valid YAML: {exc}") from exc
        try:
            return cls.model_validate(data or {})
        except ValidationError as exc:
            raise RunsError(f"{path}: " + "; ".join(describe_validation_error(exc))) from exc

    def write(self, workspace: Workspace) -> Path:
        """Write atomically (not committed), pairs sorted by id."""
        self.pairs = sorted(self.pairs, key=lambda e: e.id)
        head = "# The admitted set: pair ids, versions and calibration evidence (docs/calibration.md).\n"
        body = yaml.safe_dump(self.model_dump(mode="json", exclude_none=True), sort_keys=False, width=100)
        return workspace.write("benchmark.yaml", head + body)

    def entry(self, pair_id: str) -> AdmissionEntry | None:
        """The admitted entry of a pair, if any."""
        return next((e for e in self.pairs if e.id == pair_id), None)
