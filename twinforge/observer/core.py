"""The observer: asynchronous checks, interventions, escalation and recovery bookkeeping.

Checks run at fixed intervals in the background; interventions are delivered at step boundaries;
escalation goes nudge -> plan revision -> stop (docs/design.md, "Self-intervention").

Recovery means that specific misbehaviour does not recur after the intervention; a different
later misbehaviour opens a new intervention.

Shadow mode is the control arm of an A/B: the observer checks, records what it found and the
intervention it would have delivered (``shadowed``), and never intervenes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from twinforge.core.exceptions import TwinforgeError
from twinforge.core.llm import Usage
from twinforge.observer.findings import Finding
from twinforge.observer.guidance import GuidanceWriter, Level
from twinforge.observer.plan import DetectorPlan
from twinforge.observer.rules import detect
from twinforge.observer.spec import RunSpec
from twinforge.observer.trajectory import steps_from_messages

LEVELS: tuple[Level, ...] = ("nudge", "plan", "stop")


@dataclass
class Intervention:
    """One delivered intervention.

    Attributes:
        key: ``class/kind`` of the misbehaviour.
        level: ``nudge``, ``plan`` or ``stop``.
        at_step: The step boundary it was delivered at.
        finding: What triggered it.
        text: The injected message.
        recurred_at: First later step at which the same misbehaviour showed again (``None``: it did not).
        answered: The model answered after the intervention (a note delivered when the run's budget
            ended has no answer, so it cannot count as a recovery).
    """

    key: str
    level: Level
    at_step: int
    finding: Finding
    text: str
    recurred_at: int | None = None
    answered: bool = False

    @property
    def recovered(self) -> bool:
        """The model answered afterwards and the misbehaviour did not recur (a stop is never a recovery)."""
        return self.level != "stop" and self.recurred_at is None and self.answered

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (saved in the trajectory's info)."""
        data = asdict(self)
        data["finding"] = self.finding.model_dump(mode="json")
        data["recovered"] = self.recovered
        return data


@dataclass
class Observer:
    """Harness-agnostic observer state.

    Args:
        interval: Check every ``interval`` steps.
        spec: Drift specification of the run.
        exists: Filesystem check for required outputs (live runs).
        writer: Renders guidance.
        min_confidence: Findings below this are recorded but not acted on.
        plan: Which finder decides each class (rules, LLM classifier, either, both); rules when absent.
        shadow: Detect and record, never intervene (the A/B control arm).
    """

    interval: int = 3
    spec: RunSpec | None = None
    exists: Callable[[str], bool] | None = None
    writer: GuidanceWriter = field(default_factory=GuidanceWriter)
    min_confidence: float = 0.7
    plan: DetectorPlan | None = None
    shadow: bool = False
    interventions: list[Intervention] = field(default_factory=list)
    shadowed: list[Intervention] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    checks: int = 0
    _pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(1, thread_name_prefix="observer"))
    _pending: list[tuple[int, Future[list[Finding]]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _last: dict[str, Intervention] = field(default_factory=dict)

    def due(self, step: int) -> bool:
        """Whether a check is scheduled after ``step``."""
        return step > 0 and step % self.interval == 0

    def schedule(self, messages: list[dict[str, Any]], step: int) -> None:
        """Start a check on a snapshot of the messages in the background; returns at once."""
        snapshot = list(messages)  # Mini-SWE-agent appends messages and never changes them
        future = self._pool.submit(self._check, snapshot)
        with self._lock:
            self._pending.append((step, future))

    def _check(self, snapshot: list[dict[str, Any]]) -> list[Finding]:
        """One background check; an unreadable message or a failing rule or classifier never reaches the agent loop."""
        try:
            steps = steps_from_messages(snapshot)
            found = detect(steps, self.spec, self.exists)
            return self.plan.apply(found, steps, self.spec) if self.plan is not None else found
        except TwinforgeError as exc:
            self.errors.append(str(exc))
            return []

    def ready(self, step: int) -> Intervention | None:
        """At a step boundary: the intervention to deliver now, if a finished check found one.

        Never waits for a check that is still running.
        """
        with self._lock:
            done = [(s, f) for s, f in self._pending if f.done()]
            self._pending = [(s, f) for s, f in self._pending if not f.done()]
        chosen: Intervention | None = None
        for _, future in done:
            self.checks += 1
            for finding in sorted(future.result(), key=lambda f: -f.confidence):
                if finding not in self.findings:
                    self.findings.append(finding)
                candidate = self._consider(finding, step)
                if candidate is not None and chosen is None:
                    chosen = candidate
        if chosen is None:
            return None
        self._last[chosen.key] = chosen
        if self.shadow:
            self.shadowed.append(chosen)
            return None
        self.interventions.append(chosen)
        return chosen

    def answered(self, step: int) -> None:
        """The model answered call ``step``: interventions delivered before it were answered."""
        for intervention in (*self.interventions, *self.shadowed):
            if step > intervention.at_step:
                intervention.answered = True

    def _consider(self, finding: Finding, step: int) -> Intervention | None:
        if finding.confidence < self.min_confidence:
            return None
        previous = self._last.get(finding.key)
        if previous is None:
            level: Level = "nudge"
        elif max(finding.steps) > previous.at_step:  # it came back after the intervention
            if previous.recurred_at is None:
                previous.recurred_at = min(s for s in finding.steps if s > previous.at_step)
            level = LEVELS[min(LEVELS.index(previous.level) + 1, len(LEVELS) - 1)]
        else:
            return None  # evidence from before the intervention: already handled
        return Intervention(finding.key, level, step, finding, self.writer.render(finding, level))

    def close(self) -> None:
        """Stop the background worker."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def summary(self) -> dict[str, Any]:
        """Counts and every intervention, for the trajectory and for experiments."""
        plan = self.plan
        return {
            "mode": "shadow" if self.shadow else "intervene",
            "checks": self.checks,
            "interventions": [i.as_dict() for i in self.interventions],
            "shadowed": [i.as_dict() for i in self.shadowed],
            "findings": [f.model_dump(mode="json") for f in self.findings],
            "recovered": sum(i.recovered for i in self.interventions),
            "classifier_checks": len(plan.classifications) if plan else 0,
            "classifier_tokens": Usage.total(c.usage for c in plan.classifications).tokens if plan else 0,
            "errors": self.errors + (plan.errors if plan else []),
        }
