"""Rationales that only restate the rubric (issue 10, item 3): detected, then re-asked once.

A rationale restates the rubric when it cites nothing of the blueprint that the rubric does not
also say, and at least half of its content words come from the dimension's question and anchors.
"""

from __future__ import annotations

from blueprints import FIELDS, Blueprint, Dimensions, load_check_rules
from blueprints.checks import content_terms

RESTATE_SHARE = 0.5  # share of a rationale's content words taken from the rubric


def restates_rubric(rationale: str, rubric: str, blueprint_text: str, stopwords: frozenset[str]) -> bool:
    """True when ``rationale`` cites nothing of the blueprint and mostly repeats ``rubric``."""
    words = content_terms(rationale, stopwords)
    if not words:
        return False
    rubric_words = content_terms(rubric, stopwords)
    if words & (content_terms(blueprint_text, stopwords) - rubric_words):
        return False
    return len(words & rubric_words) / len(words) >= RESTATE_SHARE


def restating_dimensions(rationales: dict[str, str], dimensions: Dimensions, bp: Blueprint) -> list[str]:
    """Ids of the dimensions whose rationale restates their rubric, in dimension order."""
    stopwords = load_check_rules().stopwords
    text = " ".join(str(getattr(bp, f)) for f in FIELDS)
    return [
        d.id
        for d in dimensions.dimensions
        if d.id in rationales and restates_rubric(rationales[d.id], d.rubric_text(), text, stopwords)
    ]
