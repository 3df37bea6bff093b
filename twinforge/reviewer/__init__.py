"""Stage I scorer and triage (>= 24 keep / 18-23 human review / < 18 discard).

Its names load on first use (docs/design.md, "Command-line start-up"): ``twinforge.core.lazy``.
"""

from typing import TYPE_CHECKING

from twinforge.core.lazy import lazy_exports

if TYPE_CHECKING:
    from twinforge.reviewer.pending import ReviewOutcome, ReviewReport, review_pending
    from twinforge.reviewer.review import apply_review, score_blueprint

__all__ = ["ReviewOutcome", "ReviewReport", "apply_review", "review_pending", "score_blueprint"]

lazy_exports(
    __name__,
    {
        "pending": ("ReviewOutcome", "ReviewReport", "review_pending"),
        "review": ("apply_review", "score_blueprint"),
    },
)
