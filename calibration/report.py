"""``twinforge report``: CAP and ASR@k tables and plots (Markdown, HTML, PNG).

docs/calibration.md, "Report": calibration runs and each evaluated model x harness are shown apart
(never pooled together), UNDETERMINED runs are listed separately (they count as not safe in ASR@k),
and pairs needing a look (calibrated only with a stand-in, detector / trajectory disagreements) are
listed. Per pair, model and harness only the runs of its latest pair digest and budgets count.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
from jinja2 import Environment, PackageLoader, StrictUndefined
from pydantic import ValidationError

from twinforge.blueprints import Attention, BuiltPair, Taxonomy, load_taxonomy
from twinforge.calibration.metrics import Metrics, PairRuns, breakdown, compute
from twinforge.calibration.records import RecordsDB, RunRow
from twinforge.calibration.results import RunDetail
from twinforge.calibration.rules import is_undetermined

NO_DATA = Metrics(0, 0, 0.0, ())
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class Section:
    """The metrics of one purpose, model and harness (calibration, or one evaluated combination).

    Attributes:
        purpose: ``calibration`` or ``evaluation``.
        model: ``provider:model``.
        harness: Harness key.
        k: Runs per side the metrics use (the smallest full K among the pairs).
        pooled: All pairs.
        by_category: Per risk category.
        by_source: Per attack source.
        pairs: Per-pair runs.
    """

    purpose: str
    model: str
    harness: str
    k: int
    pooled: Metrics
    by_category: dict[str, Metrics]
    by_source: dict[str, Metrics]
    pairs: list[PairRuns]

    @property
    def title(self) -> str:
        """``Calibration: model / harness`` or ``Evaluation: ...``."""
        return f"{self.purpose.capitalize()}: {self.model} / {self.harness}"


@dataclass
class Report:
    """The computed report and where its files went.

    Attributes:
        sections: Calibration sections first, then one per evaluated model x harness.
        undetermined: UNDETERMINED runs, one line each (``purpose model pair side k=n: cause``).
        disagreements: Runs whose detector disagreed with the trajectory, one line each.
        attention: Pairs needing a look from the workspace's calibration records.
        pairs: What each pair in the workspace says it is: the blueprint it implements, its
            fidelity (``exact``, ``adapted`` with its differences, ``by hand``) and what built it
            (docs/implementer.md, "Fidelity").
        files: Written files.
    """

    sections: list[Section]
    undetermined: list[str] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)
    attention: list[Attention] = field(default_factory=list)
    pairs: list[BuiltPair] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    @property
    def fidelity(self) -> dict[str, str]:
        """``{pair id: fidelity}`` for the per-pair tables (``-`` for a pair the workspace no longer holds)."""
        return {p.pair: p.fidelity for p in self.pairs}

    def fidelity_counts(self) -> dict[str, int]:
        """Pairs per fidelity: ``{"exact": 3, "adapted": 2, "by hand": 9}``."""
        counts: dict[str, int] = {}
        for p in self.pairs:
            counts[p.fidelity] = counts.get(p.fidelity, 0) + 1
        return counts


def latest_runs(rows: list[RunRow]) -> list[RunRow]:
    """Per purpose, pair, model and harness: only the runs of the digest and budgets used last."""
    groups: dict[tuple[str, str, str, str], dict[tuple[str, str], list[RunRow]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for row in rows:
        groups[(row.purpose, row.pair, row.model, row.harness)][(row.digest, row.budgets)].append(row)
    out: list[RunRow] = []
    for versions in groups.values():
        newest = max(versions.values(), key=lambda runs: max(_finished(r) for r in runs))
        out += newest
    return out


def _finished(row: RunRow) -> datetime:
    at = row.finished_at or _EPOCH
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _in_order(found: dict[str, Metrics], ids: list[str]) -> dict[str, Metrics]:
    """Every taxonomy id in taxonomy order (``NO_DATA`` where no pair ran), then any id outside it."""
    return {**{i: found.get(i, NO_DATA) for i in ids}, **{i: m for i, m in found.items() if i not in ids}}


def sections(rows: list[RunRow], taxonomy: Taxonomy | None = None) -> list[Section]:
    """One section per purpose, model and harness; calibration first.

    Category and source tables list every id of ``taxonomy`` (default: the packaged one) in its
    order, with ``NO_DATA`` where no pair of that id ran.
    """
    taxonomy = taxonomy or load_taxonomy()
    risks, sources = taxonomy.risk_ids(), [s.id for s in taxonomy.sources]
    by_combination: dict[tuple[str, str, str], dict[str, PairRuns]] = defaultdict(dict)
    for r in latest_runs(rows):
        found_pairs = by_combination[(r.purpose, r.model, r.harness)]
        item = found_pairs.setdefault(r.pair, PairRuns(r.pair, r.risk, r.source, r.model, r.harness))
        (item.risk if r.side == "risk" else item.twin)[r.k] = r.outcome or ""
    out = []
    for (purpose, model, harness), found in sorted(
        by_combination.items(), key=lambda kv: (kv[0][0] != "calibration", kv[0])
    ):
        pairs = sorted(found.values(), key=lambda p: p.pair)
        k = min(max([*p.risk, *p.twin], default=0) for p in pairs)
        out.append(
            Section(
                purpose,
                model,
                harness,
                k,
                compute(pairs, k),
                _in_order(breakdown(pairs, k, lambda p: p.risk_category), risks),
                _in_order(breakdown(pairs, k, lambda p: p.source), sources),
                pairs,
            )
        )
    return out


def _notes(rows: list[RunRow]) -> tuple[list[str], list[str]]:
    undetermined, disagreements = [], []
    for r in latest_runs(rows):
        where = f"{r.purpose} {r.model}: {r.pair} {r.side} k={r.k}"
        if is_undetermined(r.outcome):
            undetermined.append(f"{where}: {r.error or 'no valid verdict'}")
        try:
            detail = RunDetail.model_validate(r.detail) if r.detail else None
        except ValidationError:
            detail = None
        for flag in detail.disagreements if detail else []:
            disagreements.append(f"{where}: {flag.kind}: {flag.detail}")
    return undetermined, disagreements


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def _last_asr(metrics: Metrics | None) -> float:
    """ASR@k of a group, NaN when it has no eligible pair (drawn as "no data", never as 0 %)."""
    return metrics.asr[-1] if metrics is not None and metrics.asr else math.nan


def _radar(by_category: dict[str, Metrics], risks: list[str], k: int, path: Path) -> None:
    values = [_last_asr(by_category.get(r)) for r in risks]
    angles = [2 * math.pi * i / len(risks) for i in range(len(risks))]
    fig = plt.figure(figsize=(5, 5))
    ax = fig.add_subplot(projection="polar")
    # NaN breaks the line: an axis without eligible pairs gets no point and no 0 % dip
    ax.plot([*angles, angles[0]], [*values, values[0]], color="tab:red", marker="o")
    if not any(math.isnan(v) for v in values):
        ax.fill([*angles, angles[0]], [*values, values[0]], color="tab:red", alpha=0.25)
    ax.set_xticks(angles, [r if not math.isnan(v) else f"{r}\nno data" for r, v in zip(risks, values, strict=True)])
    for label, value in zip(ax.get_xticklabels(), values, strict=True):
        if math.isnan(value):
            label.set_color("gray")
    ax.set_ylim(0, 1)
    ax.set_title(f"ASR@{k} by risk category")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def _sources(by_source: dict[str, Metrics], sources: list[str], k: int, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(5, 3.5))
    width = 0.38
    xs = range(len(sources))
    asr = [_last_asr(by_source.get(n)) for n in sources]
    cap = [by_source[n].cap if n in by_source and by_source[n].pairs else math.nan for n in sources]
    ax.bar([x - width / 2 for x in xs], asr, width, label=f"ASR@{k}", color="tab:red")
    ax.bar([x + width / 2 for x in xs], cap, width, label="CAP", color="tab:blue")
    for x, a, c in zip(xs, asr, cap, strict=True):
        if math.isnan(a):
            ax.text(x - width / 2, 0.02, "no data", rotation=90, ha="center", va="bottom", fontsize=7, color="gray")
        if math.isnan(c):
            ax.text(x + width / 2, 0.02, "no data", rotation=90, ha="center", va="bottom", fontsize=7, color="gray")
    ax.set_xticks(list(xs), sources)
    ax.set_ylim(0, 1)
    ax.legend()
    ax.set_title("ASR and CAP by attack source")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def _curve(by_combination: dict[str, Metrics], k: int, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(5, 3.5))
    plotted = False
    for name, metrics in by_combination.items():
        if metrics.asr:
            ax.plot(range(1, len(metrics.asr) + 1), metrics.asr, marker="o", label=name)
            plotted = True
    ax.set_xticks(range(1, k + 1))
    ax.set_xlabel("k")
    ax.set_ylabel("ASR@k")
    ax.set_ylim(0, 1)
    if plotted:
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "no eligible pair yet", ha="center", va="center", transform=ax.transAxes)
    ax.set_title("ASR@k")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def build_report(
    records: RecordsDB,
    out: Path,
    attention: list[Attention] | None = None,
    taxonomy: Taxonomy | None = None,
    pairs: list[BuiltPair] | None = None,
) -> Report:
    """Compute the metrics and write ``report.md``, ``report.html`` and three PNG plots into ``out``.

    ``pairs`` (the workspace's ``built_pairs``) adds each pair's fidelity to the per-pair tables and
    a section saying what the pairs are: fidelity counts, what built them, and every adapted pair's
    differences from its blueprint.

    The category and source plots show the first evaluated combination (the benchmark result), or
    calibration when nothing was evaluated yet; the ASR@k curve shows every section. Their axes
    are the ids of ``taxonomy`` (commands pass the workspace's merged one; default: the packaged
    one); an id without eligible pairs is drawn as "no data".
    """
    taxonomy = taxonomy or load_taxonomy()
    risks, sources = taxonomy.risk_ids(), [s.id for s in taxonomy.sources]
    rows = records.runs(status="done")
    found = sections(rows, taxonomy)
    undetermined, disagreements = _notes(rows)
    report = Report(found, undetermined, disagreements, list(attention or []), list(pairs or []))
    out.mkdir(parents=True, exist_ok=True)
    main = next((s for s in found if s.purpose == "evaluation"), found[0] if found else None)
    k = main.k if main else 0
    plots = {"radar": out / "asr_by_category.png", "sources": out / "source_bars.png", "curve": out / "asr_at_k.png"}
    by_category, by_source = (main.by_category, main.by_source) if main else ({}, {})
    _radar(by_category, [*risks, *(r for r in by_category if r not in risks)], k, plots["radar"])
    _sources(by_source, [*sources, *(s for s in by_source if s not in sources)], k, plots["sources"])
    _curve({s.title: s.pooled for s in found}, max([s.k for s in found], default=1), plots["curve"])
    env = Environment(
        loader=PackageLoader("twinforge.calibration", "templates"),
        undefined=StrictUndefined,
        autoescape=lambda name: bool(name and name.endswith(".html.j2")),  # agent text must not become markup
        trim_blocks=True,
        lstrip_blocks=True,
    )
    context = {
        "report": report,
        "pct": _pct,
        "plot_title": main.title if main else "no runs yet",
        "plots": {name: p.name for name, p in plots.items()},
    }
    for name in ("report.md", "report.html"):
        target = out / name
        target.write_text(env.get_template(f"{name}.j2").render(**context))
        report.files.append(target)
    report.files += list(plots.values())
    return report
