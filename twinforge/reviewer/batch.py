"""The reviewer's one call per batch (docs/stage1.md, "One call per batch"): the study's rule, for a capable model.

One call scores up to ten blueprints: its reply is a list of reviews, each keyed by the blueprint's
id (``blueprint_id``) and validated on its own. A review that is missing or does not validate is
asked again alone, through the one-blueprint path with the problems fed back
(:func:`twinforge.reviewer.review.score_blueprint`); a rationale that restates the rubric is not
re-asked in this mode (the review records it, and a ``kept`` band goes to a person).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from twinforge.blueprints import (
    FIELDS,
    BlueprintRecord,
    BlueprintStore,
    Dimensions,
    Finding,
    ReplyScore,
    Review,
)
from twinforge.core.exceptions import StructuredOutputError
from twinforge.core.llm import ChatModel, Usage, list_schema, read_items, refusal_message
from twinforge.core.prompts import Prompt
from twinforge.core.settings import TriageSettings
from twinforge.reviewer.rationale import restating_dimensions
from twinforge.reviewer.review import build_review, record_findings, score_blueprint

REVIEW_BATCH = 10  # docs/stage1.md: blueprints are proposed, and scored, in batches of 10
LIST_KEY = "reviews"


def batch_reply_model(dimensions: Dimensions) -> type[BaseModel]:
    """One review of a batch reply: ``blueprint_id`` first, then one ``{quote, score, rationale}`` per dimension."""
    fields: dict[str, Any] = {"blueprint_id": (str, ...), **{d: (ReplyScore, ...) for d in dimensions.ids}}
    model: type[BaseModel] = create_model("BatchReviewReply", __config__=ConfigDict(extra="forbid"), **fields)
    return model


def batch_schema(item: type[BaseModel], ids: list[str]) -> dict[str, Any]:
    """``{"reviews": [review x len(ids)]}`` with ``blueprint_id`` fixed to the batch's ids."""
    schema = item.model_json_schema()
    schema["properties"]["blueprint_id"] = {"type": "string", "enum": list(ids)}
    return list_schema(LIST_KEY, schema, len(ids))


@dataclass
class Scored:
    """One blueprint's result in a batch.

    Attributes:
        record: The blueprint.
        review: Its review, when one validated (in the batch reply or asked alone).
        usage: Its share of the batch call (:meth:`Usage.shares`) plus its own calls asked alone.
        error: Why it has no review (the model refused, or it stayed invalid or missing).
        replies: Raw replies to keep when it failed (the batch reply, then its own).
        alone: It was asked again alone.
    """

    record: BlueprintRecord
    review: Review | None = None
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    replies: list[str] = field(default_factory=list)
    alone: bool = False


def _render(
    prompt: Prompt,
    records: list[BlueprintRecord],
    findings: dict[str, list[Finding]],
    store: BlueprintStore,
    dimensions: Dimensions,
) -> list[Any]:
    cells: dict[str, dict[str, Any]] = {}
    shown = []
    for record in records:
        bp = record.blueprint
        source, risk = store.taxonomy.split(bp.taxonomy_id)
        cells.setdefault(bp.taxonomy_id, {"id": bp.taxonomy_id, "source": source, "risk": risk})
        shown.append(
            {
                "id": record.id,
                "cell": bp.taxonomy_id,
                "source": source,
                "risk": risk,
                "fields": [(name, getattr(bp, name)) for name in FIELDS],
                "findings": findings[record.id],
                "follow_ups": record.follow_ups,
            }
        )
    return prompt.render(
        blueprints=shown, cells=list(cells.values()), dimensions=dimensions.dimensions, dimension_ids=dimensions.ids
    )


def score_batch(
    chat: ChatModel,
    records: list[BlueprintRecord],
    store: BlueprintStore,
    dimensions: Dimensions,
    thresholds: TriageSettings,
    *,
    retries: int = 2,
    prompt: Prompt | None = None,
    alone_prompt: Prompt | None = None,
) -> list[Scored]:
    """Score ``records`` (up to :data:`REVIEW_BATCH`) in one call; ask a missing or invalid review again alone.

    Each review of the reply is validated on its own and matched to its blueprint by
    ``blueprint_id`` (an id outside the batch, or a second review of one, is invalid). The scores are
    capped by the blueprint's doubts and banded as in the one-blueprint path. With ``retries`` at 0
    nothing is asked alone: a missing or invalid review fails and the blueprint stays proposed.

    Args:
        chat: The reviewer model.
        records: The blueprints of the batch.
        store: The workspace's blueprints (taxonomy).
        dimensions: The review dimensions.
        thresholds: The triage bands.
        retries: Calls a review asked alone may take (the batch call was its first attempt).
        prompt: The batch's template pair (default ``review-batch``).
        alone_prompt: The one-blueprint template pair (default ``review``).

    Returns:
        One result per record, in order.

    Raises:
        ModelCallError: Transport failure of the batch call (nothing was scored).
    """
    prompt = prompt or Prompt("review-batch")
    item_model = batch_reply_model(dimensions)
    ids = [r.id for r in records]
    findings = {r.id: record_findings(r) for r in records}
    messages = _render(prompt, records, findings, store, dimensions)
    completion = chat.complete(messages, schema=batch_schema(item_model, ids), schema_name=LIST_KEY)
    results = {
        r.id: Scored(r, usage=share, replies=[completion.raw])
        for r, share in zip(records, completion.usage.shares(len(records)), strict=True)
    }
    if completion.refused:  # not re-asked (docs/workspace.md, "Model replies")
        for scored in results.values():
            scored.error = refusal_message(completion.refusal)
        return list(results.values())
    read = read_items(completion, item_model, list_key=LIST_KEY)
    problems: dict[str, tuple[str, list[str]]] = {}
    for item in read.items:
        said = item.raw.get("blueprint_id") if isinstance(item.raw, dict) else None
        key = said if isinstance(said, str) and said in results else None
        own = [e.removeprefix(f"{LIST_KEY}[{item.position}].") for e in item.errors]
        if key is None or results[key].review is not None or key in problems:
            continue  # another blueprint's id, a second review of one, or none: no blueprint to hold it against
        if item.value is None:
            problems[key] = (json.dumps(item.raw, ensure_ascii=False), own)
            continue
        record = results[key].record
        given: dict[str, ReplyScore] = {d: getattr(item.value, d) for d in dimensions.ids}
        still = restating_dimensions(given, dimensions, record.blueprint)
        notes = [f"rationale restates the rubric for {', '.join(still)} (not re-asked in batch mode)"] if still else []
        results[key].review = build_review(
            given, findings[key], thresholds, model=chat.name, prompt=prompt.version, notes=notes, still=still
        )
    document = [e.removeprefix("(document): ") for e in read.errors]
    for key, scored in results.items():
        if scored.review is not None:
            continue
        reply, errors = problems.get(key, ("", document or [f"the batch reply held no review of {key}"]))
        if retries < 1:
            scored.error = "; ".join([*errors, "not asked alone: validation_retries = 0"])
            continue
        scored.alone = True
        try:
            review, completions = score_blueprint(
                chat,
                scored.record,
                store,
                dimensions,
                thresholds,
                retries=retries - 1,
                prompt=alone_prompt,
                previous=(reply, errors) if reply else None,
                reask_restating=False,
            )
        except StructuredOutputError as exc:
            scored.error = str(exc)
            scored.usage += exc.usage or Usage(calls=exc.attempts)
            scored.replies += exc.raws
            continue
        scored.review = review
        scored.usage += Usage.of(completions)
    return list(results.values())
