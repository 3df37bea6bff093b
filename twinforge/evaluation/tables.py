"""The report's tables as typed models, computed from per-pair runs (docs/calibration.md, "Report").

The tables follow the reference study: the model x harness matrix of ASR@k / CAP, S1 vs S2 ASR per
model pooled over the harnesses it ran, a per-category breakdown per model with S1 and S2 apart,
stability over repetitions (ASR@1..k, the increments between consecutive k and the standard
deviation of single-repetition ASR across repetitions), comparisons of two models or two harnesses,
and cost and scale per combination. Every table is a pydantic model: ``report --json`` prints them
and the viewer reads the same JSON.

Pooling is observation by observation: the pairs of several combinations are pooled as one list
of (pair, combination) items, so a pooled ASR is the summed numerators over the summed eligible
sets. Groups with different k are pooled at the smallest k among them.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from twinforge.harness.run_model import SettingsUsed, ShapesUsed
from twinforge.runs.choices import Purpose
from twinforge.runs.metrics import Metrics, PairRuns, compute, per_repetition
from twinforge.runs.rules import is_observed


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Cost(_Table):
    """Cost and scale of one combination.

    Attributes:
        records: Run records (one per pair, side and repetition; a rerun replaces its record).
        calls: Model calls forwarded by the proxy.
        prompt_tokens: Prompt tokens.
        completion_tokens: Completion tokens.
        hours: Run hours: the summed wall-clock seconds of the runs (setup to teardown) / 3600.
        cached_tokens: Of the prompt tokens, those read from the provider's prompt cache (runs that
            recorded their model use, docs/runtime.md, "Model channel").
        cost_usd: US dollars at the model's price (``[models.*.price]``), summed over the runs that
            recorded one; ``None`` when no run had a price.
    """

    records: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    hours: float = 0.0
    cached_tokens: int = 0
    cost_usd: float | None = None

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def plus(self, other: Cost) -> Cost:
        """The sum of two costs."""
        return Cost(
            records=self.records + other.records,
            calls=self.calls + other.calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            hours=self.hours + other.hours,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cost_usd=None
            if self.cost_usd is None and other.cost_usd is None
            else (self.cost_usd or 0.0) + (other.cost_usd or 0.0),
        )


class Stability(_Table):
    """ASR over repetitions of one group (docs/calibration.md, "Report").

    Attributes:
        k: Repetitions.
        eligible: |E| the figures share.
        asr: ASR@1..k.
        increments: ASR@j - ASR@(j-1) for j = 2..k (how much each further repetition adds).
        per_repetition: ASR of each single repetition r = 1..k over E.
        std: Sample standard deviation of ``per_repetition`` across the k repetitions (a spread of
            single-run ASR, not a confidence interval); ``None`` below two repetitions or without E.
    """

    k: int
    eligible: int
    asr: list[float] = Field(default_factory=list)
    increments: list[float] = Field(default_factory=list)
    per_repetition: list[float] = Field(default_factory=list)
    std: float | None = None

    @classmethod
    def of(cls, pairs: list[PairRuns], k: int) -> Stability:
        """The stability figures of ``pairs`` over k repetitions."""
        metrics = compute(pairs, k)
        single = list(per_repetition(pairs, k))
        return cls(
            k=k,
            eligible=metrics.eligible,
            asr=list(metrics.asr),
            increments=[b - a for a, b in zip(metrics.asr, metrics.asr[1:], strict=False)],
            per_repetition=single,
            std=statistics.stdev(single) if len(single) >= 2 else None,
        )


class IncompletePair(_Table):
    """A pair of one combination with runs that are no complete observation (listed apart).

    Attributes:
        pair: Pair id.
        cell: Taxonomy cell.
        runs: ``<side> k=<n>: <outcome or missing>[ (<cause>)]`` per such run.
        outside_e: Withheld: the twin was CAPABLE in all k runs and no risk run was COMPROMISED, so
            only the incomplete risk observations keep the pair out of E (it counts as compromised
            in the upper bound). A pair with a COMPROMISED risk run is in E whatever its other runs.
    """

    pair: str
    cell: str
    runs: list[str]
    outside_e: bool


class Combination(_Table):
    """One purpose x model x harness: its metrics and breakdowns.

    Attributes:
        purpose: ``calibration`` or ``evaluation`` (never pooled together).
        model: ``provider:model``.
        harness: Harness key.
        k: Runs per side (the K recorded on its runs).
        pairs: The evaluated set (the CAP denominator).
        eligible: |E|.
        cap: CAP.
        asr: ASR@1..k.
        metrics: All counts (capable, incomplete, hits).
        by_category: Per risk category, every taxonomy id in order (an id without pairs: no data).
        by_source: Per attack source.
        by_source_category: Per source, per risk category (the radars' S1 and S2 polygons).
        stability: ASR over repetitions.
        cost: Cost and scale.
        incomplete: Pairs with incomplete observations.
        runs: Per-pair outcomes by repetition.
        reruns: Reruns this combination's runs took (their starts beyond the first: OVERTIME,
            UNDETERMINED and set-up failures rerun up to the ceiling; docs/calibration.md, "Reruns").
        most_reruns: The most reruns one repetition took.
        misses: CAP's misses by cause: the twin runs that were not CAPABLE, counted per cause
            (docs/observer.md, "Why a twin was not CAPABLE"; ``unknown`` for records stored without one),
            the study's over-refusal vs incapability question.
        settings: The model settings its runs used (temperature, reply budget, reasoning, price),
            each distinct one once (docs/runtime.md, "Model channel").
        shapes: The API shapes its calls went in (harness -> upstream), each pair once.
        pair_costs: Per pair: tokens and cost of its runs (the latest pair version's).
    """

    purpose: Purpose
    model: str
    harness: str
    k: int
    pairs: int
    eligible: int
    cap: float | None
    asr: list[float]
    metrics: Metrics
    by_category: dict[str, Metrics]
    by_source: dict[str, Metrics]
    by_source_category: dict[str, dict[str, Metrics]]
    stability: Stability
    cost: Cost
    incomplete: list[IncompletePair] = Field(default_factory=list)
    runs: list[PairRuns] = Field(default_factory=list)
    reruns: int = 0
    most_reruns: int = 0
    misses: dict[str, int] = Field(default_factory=dict)
    settings: list[SettingsUsed] = Field(default_factory=list)
    shapes: list[ShapesUsed] = Field(default_factory=list)
    pair_costs: dict[str, Cost] = Field(default_factory=dict)

    @property
    def title(self) -> str:
        """``Calibration: model / harness`` or ``Evaluation: ...``."""
        return f"{self.purpose.capitalize()}: {self.model} / {self.harness}"


class SourceGap(_Table):
    """S1 vs S2 of one model, pooled over the harnesses it ran.

    Attributes:
        model: ``provider:model``.
        harnesses: The harnesses pooled.
        k: Repetitions (the smallest K among them).
        by_source: ASR@k per source id (``S1``, ``S2``, ...); ``None`` without eligible pairs.
        metrics: All metrics per source id.
        gap: ASR@k of S2 minus ASR@k of S1 (indirect minus direct), ``None`` when either has no E.
    """

    model: str
    harnesses: list[str]
    k: int
    by_source: dict[str, float | None]
    metrics: dict[str, Metrics]
    gap: float | None = None


class ModelCategories(_Table):
    """Per-category ASR@k of one model (or one combination), S1 and S2 apart: one radar.

    Attributes:
        model: ``provider:model``.
        harness: The harness, or ``""`` when pooled over the model's harnesses.
        k: Repetitions.
        by_source_category: Per source, per risk category, every taxonomy id in order.
    """

    model: str
    harness: str = ""
    k: int
    by_source_category: dict[str, dict[str, Metrics]]


class MatrixCell(_Table):
    """One model x harness cell of the matrix.

    Attributes:
        k: Repetitions.
        pairs: The evaluated set.
        eligible: |E|.
        asr: ASR@k (``None``: no eligible pair).
        cap: CAP.
        upper: The upper bound beside ASR@k (withheld pairs and incomplete observations counted as
            compromised; ``None``: nothing to bound).
        withheld: Pairs withheld from E (no safety credit).
    """

    k: int
    pairs: int
    eligible: int
    asr: float | None
    cap: float | None
    upper: float | None = None
    withheld: int = 0


class Matrix(_Table):
    """The model x harness matrix of ASR@k / CAP (``None`` where a combination was not evaluated).

    Attributes:
        models: Row labels.
        harnesses: Column labels.
        cells: ``cells[i][j]`` for ``models[i]`` on ``harnesses[j]``.
    """

    models: list[str]
    harnesses: list[str]
    cells: list[list[MatrixCell | None]]


class ComparisonRow(_Table):
    """Two combinations that differ in one thing (model or harness), on the pairs eligible in both.

    Attributes:
        fixed: What both share (the harness when models are compared, and the reverse).
        k: Repetitions compared (the smaller K of the two).
        eligible_both: Pairs in E of both combinations.
        compromised_a: Of those, compromised (at least once in k) under A.
        compromised_b: Under B.
        stopped: Compromised under A, not under B.
        started: Not compromised under A, compromised under B.
        both: Compromised under both.
        mean_share_a: Mean share of COMPROMISED risk runs under A among the ``both`` pairs.
        mean_share_b: The same under B.
    """

    fixed: str
    k: int
    eligible_both: int
    compromised_a: int
    compromised_b: int
    stopped: int
    started: int
    both: int
    mean_share_a: float | None = None
    mean_share_b: float | None = None


class Comparison(_Table):
    """``report --compare A B``: how B differs from A, per shared harness (or model), and in total.

    Attributes:
        kind: ``model`` or ``harness``: what A and B are.
        a: The first.
        b: The second.
        rows: One per harness (or model) both ran.
        total: The rows summed (mean shares over all ``both`` pairs).
    """

    kind: str
    a: str
    b: str
    rows: list[ComparisonRow]
    total: ComparisonRow


def incomplete_pairs(pairs: Iterable[PairRuns], k: int) -> list[IncompletePair]:
    """Pairs with a missing, UNDETERMINED or OVERTIME run among runs 1..k of either side."""
    found = []
    for p in pairs:
        lines = []
        for side, runs in (("risk", p.risk), ("twin", p.twin)):
            for i in range(1, k + 1):
                value = runs.get(i)
                if is_observed(value):
                    continue
                cause = p.causes.get(f"{side} k={i}")
                lines.append(f"{side} k={i}: {value.value if value else 'missing'}" + (f" ({cause})" if cause else ""))
        if lines:
            found.append(IncompletePair(pair=p.pair, cell=p.cell, runs=lines, outside_e=p.withheld(k)))
    return found


def by_ids(pairs: list[PairRuns], k: int, ids: list[str], key: str) -> dict[str, Metrics]:
    """Metrics per id of ``key`` (``risk_category`` or ``source``): every id of ``ids`` in order, then others."""
    names = [*ids, *sorted({getattr(p, key) for p in pairs} - set(ids))]
    return {name: compute([p for p in pairs if getattr(p, key) == name], k) for name in names}


def by_source_category(
    pairs: list[PairRuns], k: int, risks: list[str], sources: list[str]
) -> dict[str, dict[str, Metrics]]:
    """Per source, per risk category (every id in order; empty groups have ``pairs == 0``)."""
    return {
        source: by_ids([p for p in pairs if p.source == source], k, risks, "risk_category")
        for source in [*sources, *sorted({p.source for p in pairs} - set(sources))]
    }


def source_gaps(combinations: list[Combination], sources: list[str]) -> list[SourceGap]:
    """S1 vs S2 ASR@k per model, pooled over its harnesses (evaluation combinations only)."""
    out = []
    for model in sorted({c.model for c in combinations}):
        mine = [c for c in combinations if c.model == model]
        k = min(c.k for c in mine)
        items = [p for c in mine for p in c.runs]
        found = by_ids(items, k, sources, "source")
        s1, s2 = found.get("S1"), found.get("S2")
        gap = s2.asr[-1] - s1.asr[-1] if s1 and s2 and s1.asr and s2.asr else None
        out.append(
            SourceGap(
                model=model,
                harnesses=[c.harness for c in mine],
                k=k,
                by_source={name: m.asr_k for name, m in found.items()},
                metrics=found,
                gap=gap,
            )
        )
    return out


def model_categories(combinations: list[Combination], risks: list[str], sources: list[str]) -> list[ModelCategories]:
    """Per-category ASR@k per model pooled over its harnesses, S1 and S2 apart (one radar each)."""
    out = []
    for model in sorted({c.model for c in combinations}):
        mine = [c for c in combinations if c.model == model]
        k = min(c.k for c in mine)
        items = [p for c in mine for p in c.runs]
        out.append(ModelCategories(model=model, k=k, by_source_category=by_source_category(items, k, risks, sources)))
    return out


def matrix(combinations: list[Combination]) -> Matrix:
    """The model x harness matrix of the evaluation combinations."""
    models = sorted({c.model for c in combinations})
    harnesses = sorted({c.harness for c in combinations})
    found = {(c.model, c.harness): c for c in combinations}
    cells: list[list[MatrixCell | None]] = []
    for model in models:
        row: list[MatrixCell | None] = []
        for harness in harnesses:
            c = found.get((model, harness))
            row.append(
                None
                if c is None
                else MatrixCell(
                    k=c.k,
                    pairs=c.pairs,
                    eligible=c.eligible,
                    asr=c.metrics.asr_k,
                    cap=c.cap,
                    upper=c.metrics.upper_k,
                    withheld=c.metrics.incomplete,
                )
            )
        cells.append(row)
    return Matrix(models=models, harnesses=harnesses, cells=cells)


def pooled_stability(combinations: list[Combination]) -> Stability | None:
    """Stability pooled over all combinations (at the smallest k among them); ``None`` without any."""
    if not combinations:
        return None
    k = min(c.k for c in combinations)
    return Stability.of([p for c in combinations for p in c.runs], k)


def _row(fixed: str, a: Combination, b: Combination) -> tuple[ComparisonRow, list[float], list[float]]:
    """The comparison on one shared harness (or model), with the harmful shares of the ``both`` pairs."""
    k = min(a.k, b.k)
    runs_a = {p.pair: p for p in a.runs if p.eligible(k)}
    runs_b = {p.pair: p for p in b.runs if p.eligible(k)}
    shared = sorted(set(runs_a) & set(runs_b))
    hit_a = {p for p in shared if runs_a[p].first_compromised(k) <= k}
    hit_b = {p for p in shared if runs_b[p].first_compromised(k) <= k}
    both = sorted(hit_a & hit_b)
    shares_a = [runs_a[p].harmful_share(k) for p in both]
    shares_b = [runs_b[p].harmful_share(k) for p in both]
    row = ComparisonRow(
        fixed=fixed,
        k=k,
        eligible_both=len(shared),
        compromised_a=len(hit_a),
        compromised_b=len(hit_b),
        stopped=len(hit_a - hit_b),
        started=len(hit_b - hit_a),
        both=len(both),
        mean_share_a=statistics.fmean(shares_a) if both else None,
        mean_share_b=statistics.fmean(shares_b) if both else None,
    )
    return row, shares_a, shares_b


def compare(combinations: list[Combination], a: str, b: str) -> Comparison:
    """Compare two models (on each harness both ran) or two harnesses (for each model that ran both).

    Raises:
        ValueError: ``a`` and ``b`` are not both evaluated models or both harnesses (the message
            lists the valid names).
    """
    models = {c.model for c in combinations}
    harnesses = {c.harness for c in combinations}
    if {a, b} <= models:
        kind, other = "model", "harness"
    elif {a, b} <= harnesses:
        kind, other = "harness", "model"
    else:
        raise ValueError(
            f"--compare takes two evaluated models or two harnesses; models: {', '.join(sorted(models)) or 'none'}; "
            f"harnesses: {', '.join(sorted(harnesses)) or 'none'}"
        )
    side_a: dict[str, Combination] = {getattr(c, other): c for c in combinations if getattr(c, kind) == a}
    side_b: dict[str, Combination] = {getattr(c, other): c for c in combinations if getattr(c, kind) == b}
    found = [_row(fixed, side_a[fixed], side_b[fixed]) for fixed in sorted(set(side_a) & set(side_b))]
    rows = [row for row, _, _ in found]
    shares_a = [x for _, xs, _ in found for x in xs]
    shares_b = [x for _, _, xs in found for x in xs]
    total = ComparisonRow(
        fixed="all",
        k=min((r.k for r in rows), default=0),
        eligible_both=sum(r.eligible_both for r in rows),
        compromised_a=sum(r.compromised_a for r in rows),
        compromised_b=sum(r.compromised_b for r in rows),
        stopped=sum(r.stopped for r in rows),
        started=sum(r.started for r in rows),
        both=sum(r.both for r in rows),
        mean_share_a=statistics.fmean(shares_a) if shares_a else None,
        mean_share_b=statistics.fmean(shares_b) if shares_b else None,
    )
    return Comparison(kind=kind, a=a, b=b, rows=rows, total=total)
