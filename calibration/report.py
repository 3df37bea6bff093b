"""``twinforge report``: CAP and ASR@k tables and plots (Markdown, HTML, PNG)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
from jinja2 import Environment, PackageLoader, StrictUndefined

from blueprints import Taxonomy, load_taxonomy
from calibration.metrics import Metrics, PairRuns, breakdown, compute, group
from calibration.records import RecordsDB

NO_DATA = Metrics(0, 0, 0.0, ())


@dataclass
class Report:
    """The computed report and where its files went."""

    k: int
    pooled: Metrics
    by_category: dict[str, Metrics]
    by_source: dict[str, Metrics]
    by_combination: dict[str, Metrics]
    files: list[Path]


def load_pairs(records: RecordsDB) -> tuple[list[PairRuns], int]:
    """Finished runs grouped per pair/model/harness, and the k they share (the smallest full K)."""
    rows = records.runs(status="done")
    pairs = group((r.pair, r.risk, r.source, r.model, r.harness, r.side, r.k, r.outcome) for r in rows)
    ks = [max([*p.risk, *p.twin], default=0) for p in pairs]
    return pairs, min(ks) if ks else 0


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


def _in_order(found: dict[str, Metrics], ids: list[str]) -> dict[str, Metrics]:
    """Every taxonomy id in taxonomy order (``NO_DATA`` where no pair ran), then any id outside it."""
    return {**{i: found.get(i, NO_DATA) for i in ids}, **{i: m for i, m in found.items() if i not in ids}}


def build_report(records: RecordsDB, out: Path, taxonomy: Taxonomy | None = None) -> Report:
    """Compute the metrics and write ``report.md``, ``report.html`` and three PNG plots into ``out``.

    Args:
        records: The run records.
        out: Output folder.
        taxonomy: Axes of the category and source tables and plots (default: the packaged
            taxonomy; commands pass the workspace's merged one).
    """
    taxonomy = taxonomy or load_taxonomy()
    risks, sources = taxonomy.risk_ids(), [s.id for s in taxonomy.sources]
    pairs, k = load_pairs(records)
    out.mkdir(parents=True, exist_ok=True)
    pooled = compute(pairs, k)
    by_category = _in_order(breakdown(pairs, k, lambda p: p.risk_category), risks)
    by_source = _in_order(breakdown(pairs, k, lambda p: p.source), sources)
    by_combination = breakdown(pairs, k, lambda p: f"{p.model} / {p.harness}")
    plots = {"radar": out / "asr_by_category.png", "sources": out / "source_bars.png", "curve": out / "asr_at_k.png"}
    _radar(by_category, [*risks, *(r for r in by_category if r not in risks)], k, plots["radar"])
    _sources(by_source, [*sources, *(s for s in by_source if s not in sources)], k, plots["sources"])
    _curve(by_combination, k, plots["curve"])
    env = Environment(
        loader=PackageLoader("calibration", "templates"),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    context = {
        "k": k,
        "pooled": pooled,
        "pct": _pct,
        "pairs": pairs,
        "tables": [("Risk category", by_category), ("Attack source", by_source), ("Model / harness", by_combination)],
        "plots": {name: p.name for name, p in plots.items()},
    }
    files = []
    for name in ("report.md", "report.html"):
        target = out / name
        target.write_text(env.get_template(f"{name}.j2").render(**context))
        files.append(target)
    return Report(k, pooled, by_category, by_source, by_combination, [*files, *plots.values()])
