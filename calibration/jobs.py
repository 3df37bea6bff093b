"""One calibration run as a self-contained job (a thread of the local pool or a Ray task)."""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from calibration.proxy import ModelProxy
from calibration.records import RecordsDB
from harness import ModelEndpoint, make_harness
from observer.diagnose import diagnose_file
from taskpair import Outcome, RunError, load_pair
from taskpair.runner import Runner
from twinforge.settings import ModelSettings


@dataclass(frozen=True)
class Job:
    """Everything a worker needs (plain data, so it crosses process and host boundaries).

    Attributes:
        row_id: The run's row in the records database.
        pair_path: Folder of the task pair on the worker's filesystem.
        side: ``risk`` or ``twin``.
        k: Repetition index, 1-based.
        model: ``[models.calibration]`` as a dict (the real key stays in the worker's environment).
        harness: Harness adapter name.
        harness_options: Its options (action mode, grammar).
        records_url: Records database URL.
        runs_dir: Where evidence goes.
        max_calls: Lower the task's model-call cap (quick calibrations); ``None`` keeps it.
    """

    row_id: int
    pair_path: str
    side: str
    k: int
    model: dict[str, Any]
    harness: str
    harness_options: dict[str, Any] = field(default_factory=dict)
    records_url: str = ""
    runs_dir: str = ""
    max_calls: int | None = None


class _Context:
    """Per-process singletons: one records connection, one proxy, one runner per runs folder."""

    lock: ClassVar[threading.Lock] = threading.Lock()
    records: ClassVar[dict[str, RecordsDB]] = {}
    proxies: ClassVar[dict[str, ModelProxy]] = {}
    runners: ClassVar[dict[str, Runner]] = {}

    @classmethod
    def get(cls, records_url: str, runs_dir: str) -> tuple[RecordsDB, ModelProxy, Runner]:
        with cls.lock:
            if records_url not in cls.records:
                cls.records[records_url] = RecordsDB(records_url)
                cls.proxies[records_url] = ModelProxy(cls.records[records_url]).start()
            if runs_dir not in cls.runners:
                cls.runners[runs_dir] = Runner(Path(runs_dir))
            return cls.records[records_url], cls.proxies[records_url], cls.runners[runs_dir]


def run_job(job: Job) -> dict[str, Any]:
    """Run one side of one pair with the harness through the proxy, detect, record.

    Returns:
        A summary: run id, outcome, verdict fields, calls, tokens, exit status.

    Raises:
        RunError: The run could not be set up; the row goes back to pending with the error kept.
    """
    records, proxy, runner = _Context.get(job.records_url, job.runs_dir)
    pair = load_pair(Path(job.pair_path))
    side = pair.risk if job.side == "risk" else pair.twin
    run_id = f"{pair.id}-{side.name}-k{job.k}-{secrets.token_hex(3)}"
    records.claim(job.row_id, run_id)
    settings = ModelSettings.model_validate(job.model)
    harness = make_harness(job.harness, **job.harness_options)
    evidence = Path(job.runs_dir) / run_id
    if job.max_calls is not None:  # a quick calibration: fewer calls than the task's budget, recorded
        side.spec.agent.model_calls = min(side.spec.agent.model_calls, job.max_calls)
    budget = side.spec.agent
    token = proxy.grant(
        run_id,
        settings,
        cap=budget.model_calls,
        seconds=budget.turn_timeout_s,
        extra_body=harness.extra_body(),
        log=evidence / "proxy.jsonl",
    )
    endpoint = ModelEndpoint(proxy.url, token, settings.model, settings.temperature, settings.max_tokens)
    try:
        with runner.session(pair, side, run_id=run_id) as session:
            result = harness.run(session, side.instruction, endpoint, evidence / "trajectory.json")
            session.final_message = result.final_message
            session.overtime = session.overtime or result.budget_exceeded
        run = session.result
    except RunError as exc:
        records.fail(job.row_id, str(exc))
        raise
    finally:
        grant = proxy.release(token)
    if run is None:
        records.fail(job.row_id, "the run ended without a result")
        raise RunError("run", f"{run_id} ended without a result")
    verdict = run.verdict
    diagnosis = None
    if side.name == "twin" and run.outcome is not Outcome.COMPLETED and result.trajectory.exists():
        # mission.md: tell incapability from over-refusal on every INCAPABLE twin.
        found = diagnose_file(result.trajectory)
        diagnosis = {"label": found.label, "findings": [f.model_dump(mode="json") for f in found.findings[:10]]}
    records.finish(
        job.row_id,
        run_id=run_id,
        outcome=run.outcome.value,
        harmful=verdict.harmful if verdict else None,
        completed=verdict.completed if verdict else None,
        exit_status=result.exit_status[:64],
        calls=grant.calls,
        prompt_tokens=grant.prompt_tokens,
        completion_tokens=grant.completion_tokens,
        seconds=run.timings.get("total", 0.0),
        evidence_dir=run.evidence_dir,
        trajectory=str(result.trajectory),
        error=run.detector_error,
        detail={
            "refused": grant.refused,
            "call_cap": budget.model_calls,
            "evidence": verdict.evidence[:10] if verdict else [],
            "diagnosis": diagnosis,
        },
    )
    return {
        "run_id": run_id,
        "pair": pair.id,
        "side": side.name,
        "k": job.k,
        "outcome": run.outcome.value,
        "calls": grant.calls,
        "exit_status": result.exit_status,
        "diagnosis": diagnosis["label"] if diagnosis else None,
    }
