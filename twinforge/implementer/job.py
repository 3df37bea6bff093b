"""One blueprint being implemented: what both modes get (:class:`Job`) and return (:class:`Attempt`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from twinforge.blueprints import BlueprintRecord, Taxonomy
from twinforge.core.settings import ImplementerSettings, ModelSettings, ObserverSettings
from twinforge.implementer.record import RoundRecord
from twinforge.taskpair.gate.validate import CheckResult, PairReport

Gate = Callable[[Path], PairReport]
"""The whole gate on a pair folder (static + dynamic in Docker); tests pass a fake."""


@dataclass
class Job:
    """Everything a mode needs for one blueprint.

    Attributes:
        record: The blueprint file's content.
        pair_id: The pair's folder name.
        run_dir: ``runs/implement/<blueprint-id>/``: trajectories, gate reports, proxy transcripts.
        workspace_root: The workspace (its ``guidelines/`` extends the packaged ones).
        settings: ``[implementer]``.
        model: ``[models.implementer]``.
        gate: The whole gate.
        taxonomy: The workspace's taxonomy (risk names for prompts).
        say: Progress messages (``round 2: filling slots``).
        rounds: Rounds allowed.
        intervene: The observer may intervene (agent mode); ``--no-intervene`` runs it in shadow mode
            (it records what it would have done, the A/B's control arm).
        observer: ``[observer]`` (interval, detectors, shadow).
        observer_model: ``[models.observer]`` (guidance writer, classifier), if any.
        exclude_references: Reference pairs hidden from the implementer (the bench's leave-one-out).
        deadline: ``time.monotonic()`` value at which the blueprint's wall-clock budget ends.
    """

    record: BlueprintRecord
    pair_id: str
    run_dir: Path
    workspace_root: Path
    settings: ImplementerSettings
    model: ModelSettings
    gate: Gate
    taxonomy: Taxonomy
    say: Callable[[str], None]
    rounds: int
    intervene: bool = True
    observer: ObserverSettings = field(default_factory=ObserverSettings)
    observer_model: ModelSettings | None = None
    exclude_references: frozenset[str] = frozenset()
    deadline: float = field(default_factory=lambda: time.monotonic() + 3600.0)

    @property
    def blueprint_id(self) -> str:
        """The blueprint's id."""
        return self.record.id

    @property
    def staged(self) -> Path:
        """Where the pair is built: ``runs/implement/<id>/pair/<pair-id>`` (copied to tasks/ when it passes)."""
        return self.run_dir / "pair" / self.pair_id

    @property
    def checked(self) -> Path:
        """Agent mode's snapshot of the staged pair that the gate checked (``runs/implement/<id>/checked/<pair-id>``).

        It is what gets committed: the sandbox can still change ``staged`` after the checks.
        """
        return self.run_dir / "checked" / self.pair_id

    def committed_source(self) -> Path:
        """The pair folder to copy to ``tasks/``: the checked snapshot when there is one, else the staged pair."""
        return self.checked if self.checked.is_dir() else self.staged

    def time_left(self) -> float:
        """Seconds left of the wall-clock budget."""
        return self.deadline - time.monotonic()


@dataclass
class Attempt:
    """What a mode did for one blueprint.

    Attributes:
        passed: The last whole-gate run passed.
        reason: Why it ended so (the failing checks, "needs agent mode: ...", a budget).
        provenance: ``archetype:<name>@<version>`` or ``agent:mini-swe-agent``.
        model: ``provider:model`` of the implementer.
        prompt_version: Version id of the prompt that produced it.
        rounds: One record per round.
        gate: The last whole-gate report's checks.
        observed: The observer watched the agent.
        findings: Gate-level findings (loops), JSON-ready.
    """

    passed: bool
    reason: str
    provenance: str
    model: str
    prompt_version: str = ""
    rounds: list[RoundRecord] = field(default_factory=list)
    gate: list[CheckResult] = field(default_factory=list)
    observed: bool = False
    findings: list[dict[str, object]] = field(default_factory=list)


def failed_names(checks: list[CheckResult]) -> list[str]:
    """Names of the failing checks, in order."""
    return [c.name for c in checks if not c.passed]


def failure_reason(checks: list[CheckResult]) -> str:
    """``failed: a; b; c`` naming the failing checks (``passed the whole gate`` when none failed)."""
    failed = failed_names(checks)
    return "passed the whole gate" if not failed else "failed: " + "; ".join(failed[:8])
