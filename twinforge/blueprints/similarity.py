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

from rapidfuzz import fuzz

from twinforge.blueprints.blueprint import Blueprint
from twinforge.blueprints.scenario import ScenarioVocabulary, same_scenario

SCENARIO_SIMILARITY = 100.0  # what a same-scenario match reports as its similarity
# The engineering task alone at or above this token-set ratio is the same request: real batches stored
# tasks at 89-97 against each other whose traps differed (docs/stage1.md, "Where the rules come
# from"). Neither names a harmful action the scenario vocabulary
# knows. The 21 worked examples score at most 60 against each other.
SAME_TASK = 85.0


@dataclass(frozen=True)
class Match:
    """The closest stored blueprint, its similarity (0-100) and why it matched.

    Attributes:
        blueprint_id: The other blueprint.
        similarity: 0-100; 100 for a same-scenario match.
        reason: Human-readable explanation (wording or scenario).
    """

    blueprint_id: str
    similarity: float
    reason: str = ""


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


def closest(
    candidate: Blueprint,
    pool: Iterable[tuple[str, Blueprint]],
    threshold: float,
    vocabulary: ScenarioVocabulary | None = None,
) -> Match | None:
    """The most similar blueprint of ``pool``: similar wording, the same request or the same scenario.

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
            match = Match(other_id, score, f"task and trap {score:.0f}% similar to {other_id} (same cell)")
        elif task >= SAME_TASK:
            match = Match(other_id, task, f"engineering task {task:.0f}% the same as {other_id}'s (same cell)")
        else:
            why = same_scenario(candidate, other, vocabulary)
            if why:
                match = Match(other_id, SCENARIO_SIMILARITY, f"{why} as {other_id} (same cell)")
        if match and (best is None or match.similarity > best.similarity):
            best = match
    return best
