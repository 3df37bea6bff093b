"""The overview's models: the report's tables with the run lists behind them, pairs needing a look."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from twinforge.viewer.models.base import View


class MetricsView(View):
    """CAP and ASR@1..k of a group (calibration/metrics.py ``Metrics``), with the runs behind it.

    Attributes:
        label: Group name (``pooled``, ``R3``, ``S2``).
        pairs: Pairs in the group.
        eligible: |E|.
        cap: CAP in [0, 1] (``None`` for an empty group).
        asr: ASR@1..k in [0, 1]; empty when E is empty.
        incomplete: Withheld pairs: a CAPABLE twin, no COMPROMISED risk run and an incomplete risk
            observation (a missing, UNDETERMINED or OVERTIME run): outside E, listed apart, counted as
            compromised in the upper bound (docs/calibration.md, "Metrics").
        upper: The upper bound beside ASR@k (``None``: nothing to bound).
        runs: Query parameters of the run list behind this cell.
    """

    label: str
    pairs: int
    eligible: int
    cap: float | None
    asr: list[float]
    incomplete: int
    upper: float | None = None
    runs: dict[str, str]


class SectionView(View):
    """One table of the report: calibration, or one evaluated model x harness.

    Attributes:
        key: Stable id of the section (its page: ``/sections/<key>``).
        title: ``Calibration: model / harness``.
        purpose: ``calibration`` or ``evaluation``.
        model: Model.
        harness: Harness key, ``name@version:mode`` (docs/calibration.md, "Harnesses").
        k: Runs per side the metrics use.
        rows: Pooled, then per risk category, then per source.
        reruns: Reruns the section's runs took (most for one repetition in ``most_reruns``).
        most_reruns: The most reruns one repetition took.
    """

    key: str
    title: str
    purpose: str
    model: str
    harness: str
    k: int
    rows: list[MetricsView]
    reruns: int = 0
    most_reruns: int = 0


class Look(View):
    """A pair that needs a look.

    Attributes:
        pair: Pair id ('' when the finding is not about one pair).
        kind: ``stand-in``, ``disagreement``, ``undetermined``, ``calibration failed``, ``unreadable``.
        detail: What was found.
        run_id: The run it is about, if one.
    """

    pair: str
    kind: str
    detail: str
    run_id: str = ""


class Overview(View):
    """``/api/overview``: the overview page.

    Attributes:
        workspace: The workspace folder's name.
        counts: Blueprints per status.
        coverage: Risk id -> source id -> blueprints in that cell.
        sources: Source ids in taxonomy order.
        invalid_blueprints: Blueprint files that do not validate (path -> problem).
        pairs: Task pairs in ``tasks/``.
        admitted: Admitted pair ids, with the calibration model and whether it was a stand-in.
        sections: The report's tables.
        looks: Pairs that need a look.
        runs: Finished runs in the records.
        plots: Report plot file names present under ``runs/report/``.
        computed_at: When the tables were computed (they are recomputed when the records change).
        refreshing: The records changed since; new tables are being computed.
    """

    workspace: str
    counts: dict[str, int]
    coverage: dict[str, dict[str, int]]
    sources: list[str]
    invalid_blueprints: dict[str, str] = Field(default_factory=dict)
    pairs: int = 0
    admitted: list[dict[str, Any]] = Field(default_factory=list)
    sections: list[SectionView] = Field(default_factory=list)
    looks: list[Look] = Field(default_factory=list)
    runs: int = 0
    plots: list[str] = Field(default_factory=list)
    computed_at: datetime | None = None
    refreshing: bool = False
