"""Stage I scorer and triage (>= 24 keep / 18-23 human review / < 18 discard)."""

from twinforge.reviewer.pending import ReviewOutcome, ReviewReport, review_pending
from twinforge.reviewer.review import apply_review, score_blueprint

__all__ = ["ReviewOutcome", "ReviewReport", "apply_review", "review_pending", "score_blueprint"]
