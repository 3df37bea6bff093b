"""The observer: asynchronous checks, interventions, escalation and recovery bookkeeping.

Everything slow happens on the observer's own thread (docs/observer.md, "The observer"): reading
the trajectory, the rules, the optional LLM classifier and the optional LLM that writes the DO /
DON'T lines. The agent's thread only hands over a snapshot of its messages after each step
(:meth:`Observer.observe`, a list copy) and, at the next step boundary, takes a finished
intervention if there is one (:meth:`Observer.ready`); neither waits for the observer. While the
observer is busy, newer snapshots replace older ones: it always reads the latest trajectory, and a
slow model never builds a queue.

Escalation goes nudge -> plan revision -> stop (docs/design.md, "Self-intervention"). Recovery
means that specific misbehaviour does not recur after the intervention; a different later
misbehaviour opens a new intervention. Shadow mode is the control arm of an A/B: the observer
checks, records what it found and the intervention it would have delivered (``shadowed``), and
never intervenes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

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
    """One intervention, written on the observer's thread and delivered at a step boundary.

    Attributes:
        key: ``class/kind`` of the misbehaviour.
        level: ``nudge``, ``plan`` or ``stop``.
        at_step: The step boundary it was delivered at (``-1`` while it waits for one).
        finding: What triggered it.
        text: The injected message.
        checked_at: The step of the trajectory snapshot the check read (``at_step - checked_at``
            is how far the agent went on while the observer worked).
        recurred_at: First later step at which the same misbehaviour showed again (``None``: it did not).
        answered: The model answered after the intervention (a note delivered when the run's budget
            ended has no answer, so it cannot count as a recovery).
    """

    key: str
    level: Level
    at_step: int
    finding: Finding
    text: str
    checked_at: int = 0
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
    """Harness-agnostic observer, with its own thread.

    Args:
        interval: Check when at least this many steps were added since the last check.
        spec: Drift specification of the run.
        exists: Filesystem check for required outputs (live runs); called on the observer's thread.
        writer: Renders guidance (with ``[models.observer]``, an LLM writes it, on the observer's thread).
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
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _posted: tuple[int, list[dict[str, Any]], int] | None = None  # (sequence, snapshot, step)
    _sequence: int = 0
    _done: int = 0
    _checked_step: int = 0
    _closed: bool = False
    _thread: threading.Thread | None = None
    _outbox: list[Intervention] = field(default_factory=list)
    _last: dict[str, Intervention] = field(default_factory=dict)

    # --- the agent's thread: never waits --------------------------------------------------------

    def observe(self, messages: list[dict[str, Any]], step: int) -> None:
        """Hand the trajectory after ``step`` to the observer's thread; returns at once.

        Args:
            messages: The agent's messages (copied: the harness appends to the list and never
                changes a message once added).
            step: Model calls made so far.
        """
        with self._cond:
            if self._closed:
                return
            self._sequence += 1
            self._posted = (self._sequence, list(messages), step)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="observer", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def ready(self, step: int) -> Intervention | None:
        """At a step boundary: the intervention to deliver now, if the observer finished one.

        Never waits for a check or a guidance model that is still working. In shadow mode the
        intervention is recorded as delivered here and ``None`` is returned.
        """
        with self._cond:
            if not self._outbox:
                return None
            chosen = self._outbox.pop(0)
            chosen.at_step = step
            self._last[chosen.key] = chosen
            (self.shadowed if self.shadow else self.interventions).append(chosen)
        return None if self.shadow else chosen

    def answered(self, step: int) -> None:
        """The model answered call ``step``: interventions delivered before it were answered."""
        with self._cond:
            for intervention in (*self.interventions, *self.shadowed):
                if step > intervention.at_step:
                    intervention.answered = True

    # --- either thread --------------------------------------------------------------------------

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until the observer has processed every snapshot handed over so far.

        For the end of a run, tests and benches; the agent's steps never call it.

        Returns:
            False when ``timeout`` seconds passed first.
        """
        with self._cond:
            return self._cond.wait_for(lambda: self._done >= self._sequence or self._closed, timeout)

    def close(self) -> None:
        """Stop the observer's thread (a guidance call in flight is abandoned, never awaited)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def summary(self) -> dict[str, Any]:
        """Counts and every intervention, for the trajectory and for experiments."""
        plan = self.plan
        with self._cond:
            return {
                "mode": "shadow" if self.shadow else "intervene",
                "checks": self.checks,
                "interventions": [i.as_dict() for i in self.interventions],
                "shadowed": [i.as_dict() for i in self.shadowed],
                "undelivered": [i.as_dict() for i in self._outbox],
                "findings": [f.model_dump(mode="json") for f in self.findings],
                "recovered": sum(i.recovered for i in self.interventions),
                "classifier_checks": len(plan.classifications) if plan else 0,
                "classifier_tokens": Usage.total(c.usage for c in plan.classifications).tokens if plan else 0,
                "errors": self.errors + (plan.errors if plan else []),
            }

    # --- the observer's thread ------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._posted is not None or self._closed)
                if self._closed or self._posted is None:
                    return
                sequence, snapshot, step = self._posted
                self._posted = None
            try:
                self._check(snapshot, step)
            except Exception as exc:  # the observer's thread must outlive any failure, and say why
                with self._cond:
                    self.errors.append(f"check at step {step}: {type(exc).__name__}: {exc}")
            with self._cond:
                self._done = sequence
                self._cond.notify_all()

    def _check(self, snapshot: list[dict[str, Any]], step: int) -> None:
        """One check when ``interval`` steps were added; the guidance of its finding is written here."""
        if step - self._checked_step < self.interval:
            return
        self._checked_step = step
        steps = steps_from_messages(snapshot)
        found = detect(steps, self.spec, self.exists)
        if self.plan is not None:
            found = self.plan.apply(found, steps, self.spec)
        with self._cond:
            self.checks += 1
            self.findings += [f for f in found if f not in self.findings]
            chosen = self._choose(found)
        if chosen is None:
            return
        finding, level = chosen
        text = self.writer.render(finding, level)  # may be an LLM call: no lock held, the agent goes on
        with self._cond:
            self._outbox.append(Intervention(finding.key, level, -1, finding, text, checked_at=step))

    def _choose(self, found: list[Finding]) -> tuple[Finding, Level] | None:
        """The finding to act on and its level; marks recurrences (called with the lock held)."""
        waiting = {i.key for i in self._outbox}
        chosen: tuple[Finding, Level] | None = None
        for finding in sorted(found, key=lambda f: -f.confidence):
            if finding.confidence < self.min_confidence or finding.key in waiting:
                continue
            previous = self._last.get(finding.key)
            if previous is None:
                level: Level = "nudge"
            elif max(finding.steps) > previous.at_step:  # it came back after the intervention
                if previous.recurred_at is None:
                    previous.recurred_at = min(s for s in finding.steps if s > previous.at_step)
                level = LEVELS[min(LEVELS.index(previous.level) + 1, len(LEVELS) - 1)]
            else:
                continue  # evidence from before the intervention: already handled
            if chosen is None:
                chosen = (finding, level)
        return chosen
