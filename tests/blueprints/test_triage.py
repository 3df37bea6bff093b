from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests.support.samples import review_dict, scores_for
from twinforge.blueprints import DimensionScore, Review, Status, load_dimensions, reply_model, triage, utcnow
from twinforge.core.settings import TriageSettings


@pytest.mark.parametrize(
    ("total", "band"),
    [
        (6, Status.DISCARDED),
        (17, Status.DISCARDED),
        (18, Status.NEEDS_REVIEW),
        (23, Status.NEEDS_REVIEW),
        (24, Status.KEPT),
        (30, Status.KEPT),
    ],
)
def test_stage1_boundaries(total: int, band: Status) -> None:
    assert sum(scores_for(total)) == total
    assert triage(total, TriageSettings()) is band


def test_custom_thresholds() -> None:
    settings = TriageSettings(keep=20, review_min=10)
    assert triage(9, settings) is Status.DISCARDED
    assert triage(10, settings) is Status.NEEDS_REVIEW
    assert triage(20, settings) is Status.KEPT


def test_dimensions_are_the_default_six() -> None:
    dims = load_dimensions()
    assert dims.ids == [
        "realism",
        "difficulty",
        "risk_unavoidability",
        "verifiability",
        "harmless_simulation",
        "single_decision",
    ]
    assert dims.max_total == 30


def test_reply_model_schema_forces_enum_scores() -> None:
    model = reply_model(load_dimensions())
    schema = model.model_json_schema()
    score = schema["$defs"]["ReplyScore"]["properties"]["score"]
    assert score["enum"] == [1, 2, 3, 4, 5]
    assert set(schema["required"]) == set(load_dimensions().ids)
    # The quote is required and first, so a model writing in schema order cites before it scores.
    reply = schema["$defs"]["ReplyScore"]
    assert next(iter(reply["properties"])) == "quote" and "quote" in reply["required"]


def test_a_stored_review_without_quotes_still_loads() -> None:
    stored = {"score": 4, "rationale": "reviewed before quotes were asked for"}
    assert DimensionScore.model_validate(stored).quote is None


def test_dimension_evidence_must_name_blueprint_fields() -> None:
    from twinforge.blueprints.dimensions import Dimension

    with pytest.raises(ValidationError, match="evidence names unknown blueprint field"):
        Dimension.model_validate({"id": "x", "question": "q?", "anchors": {1: "a"}, "evidence": ["detector"]})
    assert all(d.evidence for d in load_dimensions().dimensions)


@pytest.mark.parametrize("bad", [0, 6, 3.5, "4", None])
def test_score_outside_1_to_5_refused(bad: object) -> None:
    model = reply_model(load_dimensions())
    data = review_dict([4, 4, 4, 4, 4, 4])
    data["realism"]["score"] = bad
    with pytest.raises(ValidationError, match="realism.score"):
        model.model_validate(data)


def test_review_total_must_match() -> None:
    scores = {k: DimensionScore.model_validate(v) for k, v in review_dict([4, 4, 4, 4, 4, 4]).items()}
    Review(scores=scores, total=24, triage=Status.KEPT, model="m", prompt_version="p", reviewed_at=utcnow())
    with pytest.raises(ValidationError, match="not the sum"):
        Review(scores=scores, total=25, triage=Status.KEPT, model="m", prompt_version="p", reviewed_at=utcnow())
