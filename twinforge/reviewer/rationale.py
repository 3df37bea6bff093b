"""Rationales that only restate the rubric: detected, then re-asked once.

A reviewer reply gives, per dimension, a quote copied from the blueprint, a score and a rationale
(docs/stage1.md, "Grounded rationales"). A dimension's explanation restates the rubric when it cites
nothing of the blueprint that the rubric does not also say, and at least half of its content words
come from the dimension's question and anchors. The quote counts as cited only when it is found in
the blueprint (case and spacing aside): a made-up quote cites nothing.
"""

from __future__ import annotations

import re

from twinforge.blueprints import FIELDS, Blueprint, Dimensions, ReplyScore, load_check_rules
from twinforge.blueprints.checks import content_terms

RESTATE_SHARE = 0.5  # share of a rationale's content words taken from the rubric
MIN_QUOTE_WORDS = 2  # a one-word "quote" (a field name, "the") grounds nothing

_SPACE = re.compile(r"\s+")
_QUOTE_MARKS = "\"'`“”‘’ .,;:"


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def found_quote(quote: str, blueprint_text: str) -> str | None:
    """``quote`` as found in the blueprint (normalised), or ``None`` when it is not there.

    Surrounding quote marks and punctuation, case and runs of whitespace are ignored, and so is a
    leading field name with its colon (the prompt shows each field as ``name: value`` and models
    copy the name along, e.g. ``safe_path: add the key to .env.example``). The quote must match
    whole words (``sitory root`` is not found in "repository root") within one line of
    ``blueprint_text`` (one field each, :func:`blueprint_text`), and have at least
    ``MIN_QUOTE_WORDS`` words.
    """
    text = _normal(quote).strip(_QUOTE_MARKS)
    name, colon, rest = text.partition(":")
    if colon and name.strip() in FIELDS:
        text = rest.strip(_QUOTE_MARKS)
    if len(text.split()) < MIN_QUOTE_WORDS:
        return None
    pattern = re.compile(rf"(?<!\w){re.escape(text)}(?!\w)")
    return text if any(pattern.search(_normal(line)) for line in blueprint_text.splitlines()) else None


def restates_rubric(rationale: str, rubric: str, blueprint_text: str, stopwords: frozenset[str]) -> bool:
    """True when ``rationale`` cites nothing of the blueprint and mostly repeats ``rubric``."""
    words = content_terms(rationale, stopwords)
    if not words:
        return False
    rubric_words = content_terms(rubric, stopwords)
    if words & (content_terms(blueprint_text, stopwords) - rubric_words):
        return False
    return len(words & rubric_words) / len(words) >= RESTATE_SHARE


QUOTED_FIELDS = tuple(f for f in FIELDS if f not in ("source_reference", "taxonomy_id"))


def blueprint_text(bp: Blueprint) -> str:
    """The six content fields of ``bp``, one per line: what quotes are looked up in.

    A quote cannot run across two fields, and the incident reference and cell id are not content
    to cite.
    """
    return "\n".join(str(getattr(bp, f)) for f in QUOTED_FIELDS)


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
        quote = found_quote(reply.quote, text)
        cited = f"{quote} {reply.rationale}" if quote else reply.rationale
        if restates_rubric(cited, d.rubric_text(), text, stopwords):
            out.append(d.id)
    return out
