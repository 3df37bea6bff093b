"""Near-duplicate blueprints: the same cell and similar wording, or the same scenario.

Three tests (docs/stage1.md, "Near-duplicates"): the rapidfuzz token-set ratio of
engineering task and trap, the engineering task alone (the same request is the same scenario
whatever trap the model wrote around it), and the whole-scenario signature of
:mod:`twinforge.blueprints.scenario` (same project kind and a shared harmful action), which catches reworded
copies.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from rapidfuzz import fuzz

from twinforge.blueprints.blueprint import Blueprint
from twinforge.blueprints.scenario import ScenarioVocabulary, same_scenario

SCENARIO_SIMILARITY = 100.0  # what a same-scenario match reports as its similarity
# The engineering task alone at or above this token-set ratio is the same request: real batches stored
# tasks at 89-97 against each other whose traps differed (docs/stage1.md, "Where the rules come
# from"). Neither names a harmful action the scenario vocabulary
# knows. The 21 worked examples score at most 60 against each other.
SAME_TASK = 85.0
# A same-scenario match also needs the six scenario fields alike on average (token-set ratio): the
# reworded copies of the review bench's labelled set reach 54.5 and 62.8 against their good twins,
# the one pair of distinct good blueprints sharing a project kind and a harmful action (two S2-R5
# npm scenarios) 42.7 (docs/stage1.md, "Near-duplicates").
SCENARIO_FLOOR = 50.0
_SCENARIO_FIELDS = ("engineering_task", "trap", "safety_cue", "harm_path", "safe_path", "detection_criterion")


@dataclass(frozen=True)
class Match:
    """The closest stored blueprint, its similarity (0-100) and why it matched.

    Attributes:
        blueprint_id: The other blueprint.
        similarity: 0-100; 100 for a same-scenario match.
        reason: Human-readable explanation (wording or scenario).
        kind: ``wording`` (task and trap alike), ``request`` (the same engineering task) or
            ``scenario`` (same project kind and harmful action in other words). The first two are
            a near-duplicate, a defect; the third is a doubt (docs/stage1.md, "Near-duplicates").
    """

    blueprint_id: str
    similarity: float
    reason: str = ""
    kind: Literal["wording", "request", "scenario"] = "wording"

    @property
    def is_duplicate(self) -> bool:
        """The same blueprint in near-identical words (a defect), not only the same scenario (a doubt)."""
        return self.kind != "scenario"


def similarity(a: Blueprint, b: Blueprint) -> float:
    """Similarity 0-100 of two blueprints: rapidfuzz token-set ratio, mean of task and trap.

    Token-set ratio ignores word order and repeated words, so a reworded copy still scores high.
    Blueprints of different cells score 0: they test different decisions by definition.
    """
    if a.taxonomy_id != b.taxonomy_id:
        return 0.0
    trap = fuzz.token_set_ratio(a.trap.lower(), b.trap.lower())
    return (task_similarity(a, b) + float(trap)) / 2.0


def task_similarity(a: Blueprint, b: Blueprint) -> float:
    """Token-set ratio 0-100 of the two engineering tasks; 0 for blueprints of different cells."""
    if a.taxonomy_id != b.taxonomy_id:
        return 0.0
    return float(fuzz.token_set_ratio(a.engineering_task.lower(), b.engineering_task.lower()))


def scenario_wording(a: Blueprint, b: Blueprint) -> float:
    """Mean token-set ratio 0-100 of the six scenario fields of two blueprints."""
    ratios = [fuzz.token_set_ratio(getattr(a, f).lower(), getattr(b, f).lower()) for f in _SCENARIO_FIELDS]
    return float(sum(ratios)) / len(ratios)


def closest(
    candidate: Blueprint,
    pool: Iterable[tuple[str, Blueprint]],
    threshold: float,
    vocabulary: ScenarioVocabulary | None = None,
) -> Match | None:
    """The most similar blueprint of ``pool``: similar wording, the same request or the same scenario.

    A near-duplicate (wording or request) wins over a same-scenario match, then the higher similarity.
    Matches are wording (task and trap) at or above ``threshold``, the engineering task alone at or
    above ``SAME_TASK``, or the same scenario signature.

    Args:
        candidate: The new blueprint.
        pool: ``(id, blueprint)`` pairs already stored (or earlier in the same batch).
        threshold: Minimum wording similarity 0-100 (``[generator] near_duplicate_threshold``).
        vocabulary: Scenario vocabulary (default: the bundled ``guidelines/scenarios.yaml``).
    """
    best: Match | None = None
    for other_id, other in pool:
        task = task_similarity(candidate, other)
        same_cell = candidate.taxonomy_id == other.taxonomy_id
        trap = fuzz.token_set_ratio(candidate.trap.lower(), other.trap.lower()) if same_cell else 0.0
        score = (task + trap) / 2.0  # what similarity() returns, without computing the task ratio twice
        match = None
        if score >= threshold:
            match = Match(other_id, score, f"task and trap {score:.0f}% similar to {other_id} (same cell)", "wording")
        elif task >= SAME_TASK:
            match = Match(
                other_id, task, f"engineering task {task:.0f}% the same as {other_id}'s (same cell)", "request"
            )
        else:
            why = same_scenario(candidate, other, vocabulary)
            if why and scenario_wording(candidate, other) >= SCENARIO_FLOOR:
                match = Match(other_id, SCENARIO_SIMILARITY, f"{why} as {other_id} (same cell)", "scenario")
        if match and (best is None or _rank(match) > _rank(best)):
            best = match
    return best


def _rank(match: Match) -> tuple[bool, float]:
    return (match.is_duplicate, match.similarity)
