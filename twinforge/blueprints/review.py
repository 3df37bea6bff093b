"""The Stage I review: six dimension scores, their total and the triage band."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, create_model, field_validator, model_validator

from twinforge.blueprints.dimensions import Dimensions
from twinforge.blueprints.findings import Finding
from twinforge.blueprints.status import Status
from twinforge.core.settings import TriageSettings

Score = Literal[1, 2, 3, 4, 5]


class ReplyScore(BaseModel):
    """One dimension as the reviewer model sends it: a quote, an integer score 1-5 and a rationale.

    ``quote`` comes first so that a model writing the reply in schema order copies its evidence
    from the blueprint before it scores (docs/stage1.md, "Grounded rationales"); it may be empty,
    and a quote that is not found in the blueprint counts for nothing.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    quote: Annotated[str, StringConstraints(strip_whitespace=True, max_length=400)]
    score: Score
    rationale: Annotated[str, StringConstraints(strip_whitespace=True, min_length=3)]

    @field_validator("score", mode="before")
    @classmethod
    def _integer_only(cls, value: object) -> object:
        # JSON true would pass as 1 in lax mode; a score must be a JSON integer.
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"score must be an integer 1-5, got {value!r}")
        return value


class ScoreCap(BaseModel):
    """Why a stored score is lower than the model gave: a failed check caps its dimension.

    Attributes:
        limit: The highest score allowed while the checks fail.
        model_score: What the reviewer model gave.
        rules: Ids of the checks imposing the cap (``near-duplicate`` for the duplicate flag).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    limit: Score
    model_score: Score
    rules: tuple[str, ...]


class DimensionScore(ReplyScore):
    """A stored dimension score: the (possibly capped) score, the rationale and the cap, if any.

    ``quote`` is what the reviewer cited of the blueprint; ``None`` in reviews stored before
    reviewers were asked for one.
    """

    quote: Annotated[str, StringConstraints(strip_whitespace=True, max_length=400)] | None = None  # type: ignore[assignment]
    cap: ScoreCap | None = None


def triage(total: int, thresholds: TriageSettings) -> Status:
    """Band a review total (Stage I rule, docs/stage1.md: >= 24 keep, 18-23 human review, < 18 discard).

    Args:
        total: Sum of the dimension scores (6-30 with the default six dimensions).
        thresholds: ``keep`` and ``review_min`` from ``[triage]``.

    Returns:
        ``KEPT``, ``NEEDS_REVIEW`` or ``DISCARDED``.
    """
    if total >= thresholds.keep:
        return Status.KEPT
    if total >= thresholds.review_min:
        return Status.NEEDS_REVIEW
    return Status.DISCARDED


def reply_model(dimensions: Dimensions) -> type[BaseModel]:
    """The pydantic model a reviewer reply must validate as: one ``DimensionScore`` per dimension.

    Scores are an enum in its JSON schema, so grammar-constrained servers (llama.cpp) must emit
    1-5; the reply is still validated.
    """
    fields: dict[str, Any] = {d: (ReplyScore, ...) for d in dimensions.ids}
    model: type[BaseModel] = create_model("ReviewReply", __config__=ConfigDict(extra="forbid"), **fields)
    return model


class Review(BaseModel):
    """A stored review.

    Attributes:
        scores: Dimension id -> score and rationale.
        total: Sum of the scores (checked).
        triage: The band the total fell in when reviewed.
        model: ``provider:model`` of the reviewer.
        prompt_version: Version id of the review prompt template.
        reviewed_at: When (UTC).
        findings: The doubts the reviewer was shown (they capped scores and send the blueprint to a
            person whatever its total).
        notes: Remarks, e.g. that a rationale restating the rubric was re-asked.
        restated: Dimensions whose rationale still only restated the rubric after the one re-ask
            (their scores are unexplained, so a ``kept`` band goes to human review).
    """

    model_config = ConfigDict(extra="forbid")

    scores: dict[str, DimensionScore]
    total: int
    triage: Status
    model: str
    prompt_version: str
    reviewed_at: datetime
    findings: list[Finding] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    restated: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _total_matches(self) -> Review:
        computed = sum(s.score for s in self.scores.values())
        if computed != self.total:
            raise ValueError(f"total {self.total} is not the sum of the scores ({computed})")
        return self
