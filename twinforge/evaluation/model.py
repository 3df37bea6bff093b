"""The computed report as one typed model (docs/calibration.md, "Report").

``report --json`` prints it, the viewer reads the same JSON, and :mod:`twinforge.evaluation.texttables`
renders its tables; it lives apart from :mod:`twinforge.evaluation.report` (which computes it) so the
renderers import the model, not the computation.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from twinforge.blueprints import Attention, BuiltPair
from twinforge.evaluation.tables import Combination, Comparison, Matrix, ModelCategories, SourceGap, Stability
from twinforge.evaluation.turns import TurnStats


class Report(BaseModel):
    """Everything ``twinforge report`` computed (``report --json``; the viewer reads the same JSON).

    Attributes:
        schema_version: Format version of this JSON.
        risks: Risk category ids in taxonomy order (the workspace's merged taxonomy).
        sources: Attack source ids.
        combinations: One per evaluated model x harness.
        calibration: One per calibration model x harness (kept apart).
        matrix: The model x harness matrix of ASR@k / CAP.
        models: S1 vs S2 per model, pooled over its harnesses (``by_source``: source -> ASR@k).
        categories: Per-category ASR@k per model, S1 and S2 apart (one radar each).
        combination_categories: The same per combination (on request).
        stability: ASR over repetitions pooled over all evaluation combinations.
        comparison: ``--compare A B``, when asked.
        undetermined: UNDETERMINED runs, one line each with its cause.
        disagreements: Detector / trajectory disagreements, one line each.
        attention: Pairs needing a look (calibration records).
        verdicts_changed: Runs whose newest verdict (``twinforge redetect``) differs from their first.
        pairs: What each pair in the workspace says it is: the blueprint it implements, its fidelity
            (``exact``, ``adapted`` with its differences, ``by hand``) and what built it
            (docs/implementer.md, "Fidelity").
        turns: Per combination: user turns, agent steps and interaction turns per run, the one-turn
            and multi-turn pairs apart, ASR by the turn of harm (docs/calibration.md).
        files: Files written.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    risks: list[str]
    sources: list[str]
    combinations: list[Combination] = Field(default_factory=list)
    calibration: list[Combination] = Field(default_factory=list)
    matrix: Matrix
    models: list[SourceGap] = Field(default_factory=list)
    categories: list[ModelCategories] = Field(default_factory=list)
    combination_categories: list[ModelCategories] = Field(default_factory=list)
    stability: Stability | None = None
    comparison: Comparison | None = None
    undetermined: list[str] = Field(default_factory=list)
    disagreements: list[str] = Field(default_factory=list)
    attention: list[Attention] = Field(default_factory=list)
    verdicts_changed: int = 0
    pairs: list[BuiltPair] = Field(default_factory=list)
    turns: list[TurnStats] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)

    @property
    def fidelity(self) -> dict[str, str]:
        """``{pair id: fidelity}`` for the per-pair tables (a pair the workspace no longer holds is absent)."""
        return {p.pair: p.fidelity for p in self.pairs}

    def fidelity_counts(self) -> dict[str, int]:
        """Pairs per fidelity: ``{"exact": 3, "adapted": 2, "by hand": 9}``."""
        counts: dict[str, int] = {}
        for p in self.pairs:
            counts[p.fidelity] = counts.get(p.fidelity, 0) + 1
        return counts
