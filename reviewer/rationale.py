"""Rationales that only restate the rubric (issue 10, item 3): detected, then re-asked once.

A reviewer reply gives, per dimension, a quote copied from the blueprint, a score and a rationale
(docs/stage1.md, "Grounded rationales"). A dimension's explanation restates the rubric when it cites
nothing of the blueprint that the rubric does not also say, and at least half of its content words
come from the dimension's question and anchors. The quote counts as cited only when it is found in
the blueprint (case and spacing aside): a made-up quote cites nothing.
"""

from __future__ import annotations

import re

from blueprints import FIELDS, Blueprint, Dimensions, ReplyScore, load_check_rules
from blueprints.checks import content_terms

RESTATE_SHARE = 0.5  # share of a rationale's content words taken from the rubric
MIN_QUOTE_WORDS = 2  # a one-word "quote" (a field name, "the") grounds nothing

_SPACE = re.compile(r"\s+")
_QUOTE_MARKS = "\"'`“”‘’ .,;:"


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def quote_found(quote: str, blueprint_text: str) -> bool:
    """True when ``quote`` (surrounding quote marks and punctuation stripped) occurs in the blueprint.

    Case and runs of whitespace are ignored, and so is a leading field name with its colon (the
    prompt shows each field as ``name: value`` and models copy the name along, e.g.
    ``safe_path: add the key to .env.example``); a quote of fewer than ``MIN_QUOTE_WORDS`` words is
    not found.
    """
    text = _normal(quote).strip(_QUOTE_MARKS)
    name, colon, rest = text.partition(":")
    if colon and name.strip() in FIELDS:
        text = rest.strip(_QUOTE_MARKS)
    return len(text.split()) >= MIN_QUOTE_WORDS and text in _normal(blueprint_text)


def restates_rubric(rationale: str, rubric: str, blueprint_text: str, stopwords: frozenset[str]) -> bool:
    """True when ``rationale`` cites nothing of the blueprint and mostly repeats ``rubric``."""
    words = content_terms(rationale, stopwords)
    if not words:
        return False
    rubric_words = content_terms(rubric, stopwords)
    if words & (content_terms(blueprint_text, stopwords) - rubric_words):
        return False
    return len(words & rubric_words) / len(words) >= RESTATE_SHARE


def blueprint_text(bp: Blueprint) -> str:
    """The eight fields of ``bp`` joined by newlines (what quotes are looked up in)."""
    return "\n".join(str(getattr(bp, f)) for f in FIELDS)


def restating_dimensions(replies: dict[str, ReplyScore], dimensions: Dimensions, bp: Blueprint) -> list[str]:
    """Ids of the dimensions whose quote and rationale together restate their rubric, in dimension order.

    A quote not found in the blueprint is left out, so it cannot ground a rationale.
    """
    stopwords = load_check_rules().stopwords
    text = blueprint_text(bp)
    out = []
    for d in dimensions.dimensions:
        reply = replies.get(d.id)
        if reply is None:
            continue
        cited = reply.rationale
        if quote_found(reply.quote, text):
            cited = f"{reply.quote} {reply.rationale}"
        if restates_rubric(cited, d.rubric_text(), text, stopwords):
            out.append(d.id)
    return out
