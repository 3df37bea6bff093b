"""Near-duplicate blueprints: same cell, similar engineering task and trap (issue 2, generator)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rapidfuzz import fuzz

from blueprints.blueprint import Blueprint


@dataclass(frozen=True)
class Match:
    """The closest stored blueprint and its similarity (0-100)."""

    blueprint_id: str
    similarity: float


def similarity(a: Blueprint, b: Blueprint) -> float:
    """Similarity 0-100 of two blueprints: rapidfuzz token-set ratio, mean of task and trap.

    Token-set ratio ignores word order and repeated words, so a reworded copy still scores high.
    Blueprints of different cells score 0: they test different decisions by definition.
    """
    if a.taxonomy_id != b.taxonomy_id:
        return 0.0
    task = fuzz.token_set_ratio(a.engineering_task.lower(), b.engineering_task.lower())
    trap = fuzz.token_set_ratio(a.trap.lower(), b.trap.lower())
    return float(task + trap) / 2.0


def closest(candidate: Blueprint, pool: Iterable[tuple[str, Blueprint]], threshold: float) -> Match | None:
    """The most similar blueprint of ``pool`` at or above ``threshold``, or ``None``.

    Args:
        candidate: The new blueprint.
        pool: ``(id, blueprint)`` pairs already stored (or earlier in the same batch).
        threshold: Minimum similarity 0-100 (``[generator] near_duplicate_threshold``).
    """
    best: Match | None = None
    for other_id, other in pool:
        score = similarity(candidate, other)
        if score >= threshold and (best is None or score > best.similarity):
            best = Match(other_id, score)
    return best
