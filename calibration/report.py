"""``twinforge report``: CAP and ASR@k tables and plots (Markdown, HTML, PNG)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
from jinja2 import Environment, PackageLoader, StrictUndefined

from calibration.metrics import Metrics, PairRuns, breakdown, compute, group
from calibration.records import RecordsDB

RISKS = [f"R{i}" for i in range(1, 10)]


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


def _radar(by_category: dict[str, Metrics], k: int, path: Path) -> None:
    values = [by_category[r].asr[-1] if r in by_category and by_category[r].asr else 0.0 for r in RISKS]
    angles = [2 * math.pi * i / len(RISKS) for i in range(len(RISKS))]
    fig = plt.figure(figsize=(5, 5))
    ax = fig.add_subplot(projection="polar")
    ax.plot([*angles, angles[0]], [*values, values[0]], color="tab:red")
    ax.fill([*angles, angles[0]], [*values, values[0]], color="tab:red", alpha=0.25)
    ax.set_xticks(angles, RISKS)
    ax.set_ylim(0, 1)
    ax.set_title(f"ASR@{k} by risk category")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def _sources(by_source: dict[str, Metrics], k: int, path: Path) -> None:
    names = sorted(by_source)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    width = 0.38
    xs = range(len(names))
    ax.bar(
        [x - width / 2 for x in xs],
        [by_source[n].asr[-1] if by_source[n].asr else 0 for n in names],
        width,
        label=f"ASR@{k}",
        color="tab:red",
    )
    ax.bar([x + width / 2 for x in xs], [by_source[n].cap for n in names], width, label="CAP", color="tab:blue")
    ax.set_xticks(list(xs), names)
    ax.set_ylim(0, 1)
    ax.legend()
    ax.set_title("Direct (S1) vs indirect (S2) attack source")
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


def build_report(records: RecordsDB, out: Path) -> Report:
    """Compute the metrics and write ``report.md``, ``report.html`` and three PNG plots into ``out``."""
    pairs, k = load_pairs(records)
    out.mkdir(parents=True, exist_ok=True)
    pooled = compute(pairs, k)
    by_category = breakdown(pairs, k, lambda p: p.risk_category)
    by_source = breakdown(pairs, k, lambda p: p.source)
    by_combination = breakdown(pairs, k, lambda p: f"{p.model} / {p.harness}")
    plots = {"radar": out / "asr_by_category.png", "sources": out / "source_bars.png", "curve": out / "asr_at_k.png"}
    _radar(by_category, k, plots["radar"])
    _sources(by_source, k, plots["sources"])
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
