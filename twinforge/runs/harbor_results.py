"""Harbor trial results as evaluation records (``records import --format harbor JOB_DIR``).

Pairs exported with ``twinforge export --format harbor`` run on Harbor's agents and backends; their
trials come back here into the same tables (docs/calibration.md, "Records that travel"). Harbor's
own layout (harbor 0.26, ``harbor/models/trial/paths.py``): ``JOB_DIR/<trial>/result.json`` holds a
``TrialResult`` (``harbor/models/trial/result.py``), whose ``verifier_result.rewards`` are our
verifier's ``completed`` and ``harmful`` (0 or 1). Only the fields read here are modelled; the rest
of Harbor's document is ignored, since it is Harbor's to change.

A trial becomes one run: task ``twinforge/<pair>-<side>``; model ``provider:name`` from
``agent_info.model_info`` (or ``--model``); harness ``<agent>@<version>`` (or ``--harness``);
no pair digest (Harbor's ``task_checksum`` is one side's task, not the pair; an edited pair is told
apart by its model or harness label); run id the trial name, so importing a job again changes
nothing. Trials of one task, model and agent get repetitions in the order they started, after
those already stored. The outcome is the runner's own mapping
(:func:`twinforge.taskpair.format.outcomes.outcome_of`): no valid reward is UNDETERMINED with
Harbor's exception as cause; Harbor's ``AgentTimeoutError`` (the agent's time budget) is OVERTIME
unless the rewards show harm or the goal.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from twinforge.core.llm import describe_validation_error
from twinforge.runs.exceptions import RunsError
from twinforge.runs.records import RunRow
from twinforge.runs.transfer import RunExport
from twinforge.taskpair import Verdict, outcome_of

TASK_PREFIX = "twinforge/"
TIMEOUT = "AgentTimeoutError"
"""Harbor's exception when the agent ran out of its time budget (harbor 0.26, ``harbor/trial/errors.py``)."""
VALID_REWARD_ERRORS = frozenset(
    {
        "NonZeroAgentExitCodeError",
        "AgentTimeoutError",
        "ContextWindowExceededError",
        "OutputTokenExceededError",
        "ContextLengthExceededError",
        "OutputLengthExceededError",
        "AgentSafetyRefusalError",
        "ContentPolicyViolationError",
    }
)
"""Exceptions after which Harbor still counts the reward as valid (harbor 0.26,
``harbor/models/trial/error_policy.py``); used only when a result lacks Harbor's ``reward_valid``."""


class _Harbor(BaseModel):
    model_config = ConfigDict(extra="ignore")


class HarborModelInfo(_Harbor):
    """``ModelInfo``: the model an agent used."""

    name: str
    provider: str | None = None


class HarborAgentInfo(_Harbor):
    """``AgentInfo``: the agent (our harness) and its version."""

    name: str
    version: str
    model_info: HarborModelInfo | None = None


class HarborAgentContext(_Harbor):
    """``AgentContext``: token usage the agent reported."""

    n_input_tokens: int | None = None
    n_output_tokens: int | None = None


class HarborVerifierResult(_Harbor):
    """``VerifierResult``: the rewards our verifier wrote (``completed``, ``harmful``)."""

    rewards: dict[str, float | int] | None = None


class HarborException(_Harbor):
    """``ExceptionInfo``: what failed during the trial."""

    exception_type: str
    exception_message: str = ""


class HarborTrialResult(_Harbor):
    """The fields of Harbor's ``TrialResult`` (``<trial>/result.json``) an import reads."""

    schema_version: Literal[1] = 1
    task_name: str
    trial_name: str
    task_checksum: str
    agent_info: HarborAgentInfo
    agent_result: HarborAgentContext | None = None
    verifier_result: HarborVerifierResult | None = None
    exception_info: HarborException | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    reward_valid: bool | None = None

    @property
    def rewards(self) -> dict[str, float | int]:
        """The verifier's rewards (empty when it wrote none)."""
        return (self.verifier_result.rewards if self.verifier_result else None) or {}

    @property
    def valid(self) -> bool:
        """Harbor counts the reward as valid: both rewards present and no exception that voids them."""
        if not {"completed", "harmful"} <= set(self.rewards):
            return False
        if self.reward_valid is not None:
            return self.reward_valid
        return self.exception_info is None or self.exception_info.exception_type in VALID_REWARD_ERRORS


Lookup = Callable[[str, str], tuple[str, bool] | None]
"""``(pair id, side)`` -> ``(cell, safe completion possible)``, or ``None`` for a pair not known here."""


def read_trials(job_dir: Path) -> list[tuple[Path, HarborTrialResult]]:
    """Every trial result of a Harbor job folder, by trial folder name.

    Raises:
        RunsError: No trial results, or one is not valid JSON / not a TrialResult (the
            message names the file and the field).
    """
    found = []
    for path in sorted(job_dir.glob("*/result.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RunsError(f"{path}: not a readable JSON trial result: {exc}") from exc
        if isinstance(data, dict) and "trial_name" not in data and "stats" in data:
            raise RunsError(f"{path}: a job's result, not a trial's; pass the job folder {path.parent}")
        try:
            found.append((path, HarborTrialResult.model_validate(data)))
        except ValidationError as exc:
            raise RunsError(f"{path}: " + "; ".join(describe_validation_error(exc))) from exc
    if not found:
        raise RunsError(f"{job_dir}: no Harbor trial results (<trial>/result.json) in it")
    return found


def _split(path: Path, task_name: str) -> tuple[str, Literal["risk", "twin"]]:
    name = task_name.removeprefix(TASK_PREFIX)
    for side in ("risk", "twin"):
        if task_name.startswith(TASK_PREFIX) and name.endswith(f"-{side}") and len(name) > len(side) + 1:
            return name.removesuffix(f"-{side}"), "risk" if side == "risk" else "twin"
    raise RunsError(f"{path}: task {task_name!r} is not a twinforge export (twinforge/<pair>-<risk|twin>)")


def _side(name: str) -> Literal["risk", "twin"]:
    return "twin" if name == "twin" else "risk"


def _seconds(trial: HarborTrialResult) -> float:
    if trial.started_at is None or trial.finished_at is None:
        return 0.0
    return max(0.0, (trial.finished_at - trial.started_at).total_seconds())


def harbor_runs(
    job_dir: Path,
    lookup: Lookup,
    *,
    stored: dict[tuple[str, str, str, str, str], dict[str, int]] | None = None,
    model: str | None = None,
    harness: str | None = None,
) -> list[RunExport]:
    """Evaluation runs from a Harbor job folder.

    Args:
        job_dir: Harbor's job folder (``<job>/<trial>/result.json``).
        lookup: The cell and outcome policy of a pair side in this workspace.
        stored: Per ``(pair, side, model, harness, digest)``, run ids already stored -> repetition
            (their trials keep it; new trials come after the largest).
        model: Model label for every trial (default: Harbor's ``agent_info.model_info``).
        harness: Harness label for every trial (default: ``<agent>@<version>``).

    Raises:
        RunsError: A result is unreadable, a task is no twinforge export or names a pair this
            workspace does not have, or a trial has no model and ``model`` is not given.
    """
    stored = stored or {}
    groups: dict[tuple[str, str, str, str, str], list[tuple[Path, HarborTrialResult]]] = defaultdict(list)
    for path, trial in read_trials(job_dir):
        pair, side_name = _split(path, trial.task_name)
        info = trial.agent_info.model_info
        label = model or (f"{info.provider}:{info.name}" if info and info.provider else info.name if info else None)
        if not label:
            raise RunsError(f"{path}: Harbor recorded no model (agent {trial.agent_info.name}); name it with --model")
        agent = harness or f"{trial.agent_info.name}@{trial.agent_info.version}"
        groups[(pair, side_name, label, agent, "")].append((path, trial))
    runs = []
    for group, trials in sorted(groups.items()):
        pair, side, label, agent, _ = group
        found = lookup(pair, side)
        if found is None:
            raise RunsError(f"{trials[0][0]}: pair {pair!r} is not in this workspace's tasks/")
        cell, safe_completion = found
        known = dict(stored.get(group, {}))
        after = max(known.values(), default=0)
        trials.sort(key=lambda item: (item[1].started_at is None, item[1].started_at, item[1].trial_name))
        for _, trial in trials:
            if trial.trial_name not in known:
                after += 1
                known[trial.trial_name] = after
        for path, trial in trials:
            runs.append(_run(path, trial, pair, _side(side), cell, safe_completion, label, agent, known, after))
    return runs


def stored_repetitions(rows: list[RunRow]) -> dict[tuple[str, str, str, str, str], dict[str, int]]:
    """Run ids and repetitions of stored evaluation runs, per ``(pair, side, model, harness, digest)``."""
    found: dict[tuple[str, str, str, str, str], dict[str, int]] = defaultdict(dict)
    for row in rows:
        found[(row.pair, row.side, row.model, row.harness, row.digest)][row.run_id or f"#{row.id}"] = row.k
    return found


def _run(
    path: Path,
    trial: HarborTrialResult,
    pair: str,
    side: Literal["risk", "twin"],
    cell: str,
    safe_completion: bool,
    model: str,
    harness: str,
    repetitions: dict[str, int],
    k: int,
) -> RunExport:
    error = trial.exception_info
    verdict = None
    if trial.valid:
        verdict = Verdict(harmful=trial.rewards["harmful"] >= 1, completed=trial.rewards["completed"] >= 1)
    timed_out = error is not None and error.exception_type == TIMEOUT
    outcome = outcome_of(verdict, overtime=timed_out, safe_completion_possible=safe_completion)
    cause = None
    if error is not None:
        cause = f"harbor: {error.exception_type}: {error.exception_message}"[:2000]
    elif verdict is None:
        cause = f"harbor: no valid reward in {path.parent.name}/verifier"
    usage = trial.agent_result or HarborAgentContext()
    return RunExport(
        pair=pair,
        cell=cell,
        side=side,
        purpose="evaluation",
        model=model[:200],
        harness=harness[:100],
        repetition=repetitions[trial.trial_name],
        outcome=outcome,
        runs=k,
        run_id=trial.trial_name[:200],
        harmful=verdict.harmful if verdict else None,
        completed=verdict.completed if verdict else None,
        prompt_tokens=usage.n_input_tokens or 0,
        completion_tokens=usage.n_output_tokens or 0,
        seconds=_seconds(trial),
        started_at=trial.started_at,
        finished_at=trial.finished_at,
        error=cause,
    )
