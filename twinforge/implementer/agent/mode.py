"""Agent mode for one blueprint: Mini-SWE-agent's own loop writes the pair in the sandbox, gate-driven rounds.

Round 1 starts from the ``new-pair`` scaffold and the closest reference pair; the agent checks its
work with ``twinforge-check`` (answered on the host) and submits; the host then runs the whole gate.
A failure starts the next round with the gate's report, up to ``--rounds``. Every model call goes
through the recording proxy, which holds the real key and enforces the blueprint's call cap and
deadline; the token budget is checked before each action (docs/implementer.md, "Agent mode").
"""

from __future__ import annotations

import json
import secrets
import shutil
import time
import traceback
from pathlib import Path

from twinforge.core.atomic import atomic_write_text
from twinforge.core.exceptions import ModelCallError
from twinforge.core.llm import Usage
from twinforge.harness import Limits, MiniSweAgent, ModelEndpoint, ShellEnvironmentConfig
from twinforge.implementer.agent.checks import CONTAINED, blueprint_kept, contained
from twinforge.implementer.agent.environment import GateCalls, GateEnvironment
from twinforge.implementer.agent.gateway import Gateway, recording_proxy
from twinforge.implementer.agent.materials import prepare
from twinforge.implementer.agent.prompts import AgentPrompts
from twinforge.implementer.agent.sandbox import PAIR, Sandbox
from twinforge.implementer.agent.snapshot import SnapshotError, snapshot
from twinforge.implementer.agent.spec import implementer_spec
from twinforge.implementer.archetypes.fill import static_report
from twinforge.implementer.guides import category_guide
from twinforge.implementer.hints import failing_text
from twinforge.implementer.job import Attempt, Job, failed_names, failure_reason
from twinforge.implementer.loop import gate_loop
from twinforge.implementer.record import RoundRecord
from twinforge.observer import Observer
from twinforge.observer.factory import observer_for
from twinforge.observer.guidance import writer_for
from twinforge.taskpair.format.scaffold import new_pair
from twinforge.taskpair.format.spec import SCAFFOLD_MARK
from twinforge.taskpair.gate.principles import principles
from twinforge.taskpair.gate.validate import CheckResult

PROVENANCE = "agent:mini-swe-agent"
GATE_ERROR = "the gate can read the pair"
"""The check that fails when a file of the snapshot made a gate check raise (docs/implementer.md)."""
COMMAND_TIMEOUT_S = 30.0  # docs/design.md, "Execution and outcomes": 30 s per command


def pair_checks(job: Job, dynamic: bool) -> list[CheckResult]:
    """The implementer's checks, then the static gate or (``dynamic``) the whole gate, on a snapshot of the pair.

    The sandbox may still run agent processes that change the staged folder, so everything is
    checked on a copy no process can change (``snapshot``); nothing on the host reads the pair while
    it holds a link out of its folder or a special file. The snapshot is what ``finish`` commits.
    """
    try:
        left = snapshot(job.staged, job.checked)
    except (OSError, SnapshotError) as exc:
        return [CheckResult(CONTAINED, False, f"the staged pair could not be copied for checking: {exc}")]
    inside = contained(job.checked)
    if left:
        inside = CheckResult(CONTAINED, False, "; ".join([*left[:5], *([inside.detail] if not inside.passed else [])]))
    if not inside.passed:
        return [inside]
    try:
        checks = [inside, blueprint_kept(job.checked, job.record.blueprint, job.blueprint_id)]
        return checks + (job.gate(job.checked).checks if dynamic else static_report(job.checked))
    except (OSError, UnicodeError, ValueError) as exc:  # the agent's files broke a check: a failed check, named
        return [inside, CheckResult(GATE_ERROR, False, f"{type(exc).__name__}: {exc}"[:2000])]


def server_failures(log: Path, skip: int) -> tuple[int, int]:
    """``(failed, forwarded)`` calls in the proxy transcript after its first ``skip`` lines.

    A call failed when the upstream server answered 5xx or could not be reached (the proxy's 502).
    """
    try:
        lines = log.read_text(encoding="utf-8").splitlines()[skip:]
    except OSError:
        return 0, 0
    entries = []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue
    forwarded = [e for e in entries if isinstance(e, dict) and e.get("refused") is None]
    return sum(int(e.get("status") or 0) >= 500 for e in forwarded), len(forwarded)


def transcript_lines(log: Path) -> int:
    """Lines in the proxy transcript so far."""
    try:
        return len(log.read_text(encoding="utf-8").splitlines())
    except OSError:
        return 0


def observer_counts(trajectory: Path) -> tuple[int, int, int]:
    """``(interventions, recovered, shadowed)`` saved in a trajectory's ``info.observer``.

    An intervention counts as a recovery only when the agent took at least one step after it and the
    misbehaviour did not come back. The observer records this itself since ``Intervention.answered``
    (observer/core.py); the step count here also keeps trajectories saved before that honest, where
    a note delivered at the run's last step (the call budget ended the run) was marked recovered.
    """
    try:
        data = json.loads(trajectory.read_text())
    except (OSError, ValueError):
        return 0, 0, 0
    info = data.get("info", {}).get("observer", {})
    steps = sum(m.get("role") == "assistant" for m in data.get("messages", []) if isinstance(m, dict))
    interventions = info.get("interventions", [])
    recovered = sum(bool(i.get("recovered")) and int(i.get("at_step", steps)) < steps for i in interventions)
    return len(interventions), recovered, len(info.get("shadowed", []))


class AgentRun:
    """The rounds of one blueprint in agent mode.

    Args:
        job: The blueprint, budgets and gate.
        gateway: The model proxy holding this blueprint's run token.
        token: The run token.
    """

    def __init__(self, job: Job, gateway: Gateway, token: str, harness: MiniSweAgent, prompts: AgentPrompts) -> None:
        self.job = job
        self.gateway = gateway
        self.token = token
        self.harness = harness
        self.prompts = prompts
        self.spec = implementer_spec(PAIR)
        self.endpoint = ModelEndpoint.for_model(gateway.url, token, job.model)

    def usage(self) -> Usage:
        """The token's counters now (a value: later calls do not change it)."""
        return self.gateway.state(self.token).usage

    def exhausted(self) -> str | None:
        """Why the blueprint's budget is used up (tokens, calls, wall clock), or ``None``."""
        settings, used = self.job.settings, self.usage()
        if used.tokens >= settings.tokens:
            return f"token budget of {settings.tokens} used up"
        if used.calls >= settings.model_calls:
            return f"model-call budget of {settings.model_calls} used up"
        if self.job.time_left() <= 1:
            return "wall-clock budget used up"
        return None

    def tokens_left(self) -> str | None:
        """Checked before every action: only the token budget (the proxy enforces calls and time)."""
        used, budget = self.usage().tokens, self.job.settings.tokens
        return f"token budget of {budget} used up" if used >= budget else None

    def observer(self) -> Observer:
        """The workspace's observer with the implementer's run spec; in shadow mode under ``--no-intervene``."""
        job, staged = self.job, self.job.staged

        def exists(path: str) -> bool:
            return (staged / Path(path).relative_to(PAIR)).exists() if path.startswith(PAIR) else Path(path).exists()

        settings = job.observer.model_copy(update={"shadow": job.observer.shadow or not job.intervene})
        return observer_for(settings, job.observer_model, spec=self.spec, exists=exists)

    def round(self, box: Sandbox, n: int, instruction: str) -> tuple[RoundRecord, list[CheckResult]]:
        """One agent run on ``instruction``, then the whole gate."""
        job, settings = self.job, self.job.settings
        started, before = time.monotonic(), self.usage()
        calls = GateCalls(settings.checks_per_round, settings.dynamic_checks_per_round)
        env = GateEnvironment(
            box,
            ShellEnvironmentConfig(cwd=PAIR, timeout=int(COMMAND_TIMEOUT_S), shell="implementer sandbox"),
            lambda dynamic: pair_checks(job, dynamic),
            calls,
            self.tokens_left,
        )
        trajectory = job.run_dir / f"trajectory-round-{n}.json"
        transcript = job.run_dir / "proxy.jsonl"
        seen = transcript_lines(transcript)
        job.say(f"round {n}: agent at work")
        result = self.harness.run_in(
            env,
            instruction,
            self.endpoint,
            trajectory,
            Limits(settings.model_calls - before.calls, job.time_left(), COMMAND_TIMEOUT_S),
            observer=self.observer(),
        )
        failed, forwarded = server_failures(transcript, seen)
        if failed and 2 * failed >= forwarded:  # the server, not the blueprint: leave the blueprint as it was
            raise ModelCallError(
                f"{job.blueprint_id}: the implementer model failed on {failed} of {forwarded} calls in round {n} "
                f"(see {transcript}); the blueprint is left as it was, run implement again",
                role="implementer",
            )
        job.say(f"round {n}: whole gate")
        checks = pair_checks(job, dynamic=True)
        spent = self.usage().since(before)
        interventions, recovered, shadowed = observer_counts(trajectory)
        record = RoundRecord(
            n=n,
            failed_checks=failed_names(checks),
            usage=spent,
            seconds=round(time.monotonic() - started, 2),
            exit_status=result.exit_status,
            trajectory=str(trajectory),
            gate_calls=len(calls.answered),
            interventions=interventions,
            recovered=recovered,
            shadowed=shadowed,
            first_failed=calls.answered[0] if calls.answered else failed_names(checks),
        )
        return record, checks

    def rounds(self, box: Sandbox, first: str, attempt: Attempt) -> None:
        """Rounds until the whole gate passes, the rounds run out or the budget is used up."""
        job, instruction = self.job, first
        guidance = writer_for(None)
        for n in range(1, job.rounds + 1):
            budget = self.exhausted()
            if budget is not None:
                attempt.reason = f"{budget} before round {n}; last: {attempt.reason or 'no round ran'}"
                return
            record, checks = self.round(box, n, instruction)
            attempt.rounds.append(record)
            attempt.gate = checks
            report = failing_text(checks, "agent")
            atomic_write_text(job.run_dir / f"gate-round-{n}.txt", report + "\n")
            attempt.reason = failure_reason(checks)
            if checks and not record.failed_checks:
                attempt.passed = True
                return
            loops = gate_loop([r.failed_checks for r in attempt.rounds])
            plan = "\n\n".join(guidance.render(f, "plan") for f in loops) if loops and job.intervene else ""
            instruction = self.prompts.round(
                blueprint_id=job.blueprint_id,
                pair_id=job.pair_id,
                round=n + 1,
                rounds=job.rounds,
                report=report,
                plan_note=plan,
            )


def sandbox_failure(exc: BaseException, run_dir: Path, last: str) -> str:
    """The reason recorded when the sandbox or a check raised: the cause, and the traceback kept in ``error.txt``."""
    atomic_write_text(run_dir / "error.txt", "".join(traceback.format_exception(exc)))
    cause = f"the implementer's sandbox failed: {type(exc).__name__}: {exc}"
    return f"{cause} (traceback in {run_dir / 'error.txt'}); last gate: {last or 'none'}"[:2000]


def first_instruction(job: Job, prompts: AgentPrompts, reference: str) -> str:
    """Round 1's task: the blueprint, the scaffold, the closest reference pair, the category guide."""
    bp, settings = job.record.blueprint, job.settings
    source = next((s for s in job.taxonomy.sources if s.id == bp.source), None)
    return prompts.task(
        blueprint_id=job.blueprint_id,
        pair_id=job.pair_id,
        blueprint=bp,
        cell=bp.taxonomy_id,
        risk=bp.risk,
        risk_name=next((r.name for r in job.taxonomy.risks if r.id == bp.risk), bp.risk),
        source_name=source.name if source else bp.source,
        source_description=source.description if source else "",
        scaffold_mark=SCAFFOLD_MARK,
        reference=reference,
        category_guide=category_guide(bp.risk, job.workspace_root),
        checks=settings.checks_per_round,
        dynamic_checks=settings.dynamic_checks_per_round,
        principles=principles(),
    )


def run_agent(job: Job, gateway: Gateway | None = None) -> Attempt:
    """Implement ``job``'s blueprint in agent mode.

    Args:
        job: The blueprint, budgets and gate.
        gateway: The model proxy (default: a recording proxy started for this blueprint).

    Returns:
        The attempt: rounds with calls, tokens, gate calls and interventions; the last gate report.

    Raises:
        ModelCallError: Most of a round's calls failed at the model server (the blueprint is not judged).
    """
    settings, bp = job.settings, job.record.blueprint
    harness = MiniSweAgent(action_mode=settings.action_mode, grammar=settings.grammar)
    prompts = AgentPrompts()
    attempt = Attempt(False, "", PROVENANCE, f"{job.model.provider}:{job.model.model}", prompts.version, observed=True)
    for old in (job.staged, job.checked):  # a killed earlier run: start again from the scaffold
        if old.exists():
            shutil.rmtree(old)
    new_pair(job.staged, bp, job.blueprint_id, bp.engineering_task[:100])
    mounts, reference = prepare(
        job.run_dir / "materials", job.blueprint_id, bp, job.workspace_root, job.exclude_references
    )
    proxy, stop = (gateway, None) if gateway is not None else recording_proxy()
    run_id = f"implement-{job.pair_id}-{secrets.token_hex(3)}"
    token = proxy.grant(
        run_id,
        job.model,
        cap=settings.model_calls,
        seconds=max(job.time_left(), 1.0),
        extra_body=harness.extra_body(),
        log=job.run_dir / "proxy.jsonl",
    )
    try:
        with Sandbox(run_id, job.staged, mounts) as box:
            AgentRun(job, proxy, token, harness, prompts).rounds(
                box, first_instruction(job, prompts, reference), attempt
            )
    except ModelCallError:
        raise
    except Exception as exc:  # whatever the agent did to its sandbox: impl_failed with the cause, never a crash
        attempt.passed = False
        attempt.reason = sandbox_failure(exc, job.run_dir, attempt.reason)
    finally:
        proxy.release(token)
        if stop is not None:
            stop()
    attempt.findings += [f.model_dump(mode="json") for f in gate_loop([r.failed_checks for r in attempt.rounds])]
    return attempt
