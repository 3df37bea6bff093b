"""The report's figures with matplotlib, each as PNG and SVG (docs/calibration.md, "Report").

A group without eligible pairs is drawn as "no data" (a gap labelled so), never as 0 %. SVG output
is reproducible (fixed hash salt, no date) so a re-run report does not change its files needlessly.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from twinforge.evaluation.tables import Combination, ModelCategories, SourceGap, Stability
from twinforge.runs.metrics import Metrics

FORMATS = ("png", "svg")
NO_DATA = "no data"
SOURCE_COLOURS = {"S1": "tab:orange", "S2": "tab:purple"}
MARKERS = (("o", 9.0), ("s", 5.0), ("^", 4.0))

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@cache
def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the file-only backend, imported on first use.

    Imported at module level it cost every ``twinforge`` command half a second at start-up.
    """
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "twinforge"
    return plt


def _asr(metrics: Metrics | None) -> float:
    """ASR@k of a group, NaN when it has no eligible pair (drawn as "no data", never as 0 %)."""
    return metrics.asr[-1] if metrics is not None and metrics.asr else math.nan


def _save(fig: Figure, stem: Path) -> list[Path]:
    paths = []
    for fmt in FORMATS:
        path = stem.with_suffix(f".{fmt}")
        fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Date": None} if fmt == "svg" else None)
        paths.append(path)
    pyplot().close(fig)
    return paths


def source_gap_plot(gaps: list[SourceGap], sources: list[str], stem: Path) -> list[Path]:
    """Grouped bars: ASR@k per source for each model, the S2 - S1 gap written above each group."""
    fig, ax = pyplot().subplots(figsize=(max(5.0, 1.6 * len(gaps) + 2), 3.8))
    width = 0.8 / max(1, len(sources))
    for i, gap in enumerate(gaps):
        for j, source in enumerate(sources):
            x = i - 0.4 + width * (j + 0.5)
            value = _asr(gap.metrics.get(source))
            if math.isnan(value):
                ax.text(x, 0.02, NO_DATA, rotation=90, ha="center", va="bottom", fontsize=7, color="gray")
                continue
            ax.bar(x, value, width, color=SOURCE_COLOURS.get(source, f"C{j}"), label=source if i == 0 else None)
            ax.text(x, value + 0.01, f"{100 * value:.0f}", ha="center", va="bottom", fontsize=6)  # 0 % stays visible
        if gap.gap is not None:
            ax.text(i, 1.07, f"gap {100 * gap.gap:+.1f} pp", ha="center", va="bottom", fontsize=7)
    if not gaps:
        ax.text(0.5, 0.5, "no evaluated model yet", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks(range(len(gaps)), [g.model for g in gaps], rotation=20, ha="right", fontsize=7)
    ax.set_ylim(0, 1.15)
    ax.set_ylabel("ASR@k")
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, labels, fontsize=7)
    ax.set_title("S1 (direct) vs S2 (indirect) ASR@k per model")
    return _save(fig, stem)


def radar(categories: ModelCategories, risks: list[str], stem: Path) -> list[Path]:
    """One polar plot: ASR@k per risk category, one polygon per attack source."""
    angles = [2 * math.pi * i / len(risks) for i in range(len(risks))] if risks else []
    fig = pyplot().figure(figsize=(5, 5))
    ax = fig.add_subplot(projection="polar")
    empty = set(risks)
    for j, (source, table) in enumerate(categories.by_source_category.items()):
        values = [_asr(table.get(r)) for r in risks]
        empty -= {r for r, v in zip(risks, values, strict=True) if not math.isnan(v)}
        if all(math.isnan(v) for v in values):
            continue
        colour = SOURCE_COLOURS.get(source, f"C{j}")
        # NaN breaks the line: an axis without eligible pairs gets no point and no 0 % dip
        marker, size = MARKERS[j % len(MARKERS)]  # sources that meet on one point stay visible
        ax.plot([*angles, angles[0]], [*values, values[0]], color=colour, marker=marker, markersize=size, label=source)
        if not any(math.isnan(v) for v in values):
            ax.fill([*angles, angles[0]], [*values, values[0]], color=colour, alpha=0.15)
    ax.set_xticks(angles, [f"{r}\n{NO_DATA}" if r in empty else r for r in risks])
    for label, risk in zip(ax.get_xticklabels(), risks, strict=True):
        if risk in empty:
            label.set_color("gray")
    ax.set_ylim(0, 1)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper right", bbox_to_anchor=(1.25, 1.1))
    where = f" / {categories.harness}" if categories.harness else ""
    ax.set_title(f"ASR@{categories.k} by risk category\n{categories.model}{where}", fontsize=9)
    return _save(fig, stem)


def stability_plot(pooled: Stability | None, combinations: list[Combination], stem: Path) -> list[Path]:
    """ASR@1..k pooled (bold) and per combination."""
    fig, ax = pyplot().subplots(figsize=(5.5, 3.8))
    k = max([c.k for c in combinations], default=1)
    for c in combinations:
        if c.asr:
            ax.plot(
                range(1, len(c.asr) + 1), c.asr, marker=".", linewidth=1, alpha=0.6, label=f"{c.model} / {c.harness}"
            )
    if pooled is not None and pooled.asr:
        ax.plot(range(1, len(pooled.asr) + 1), pooled.asr, marker="o", linewidth=2.5, color="black", label="pooled")
    if not ax.get_lines():
        ax.text(0.5, 0.5, "no eligible pair yet", ha="center", va="center", transform=ax.transAxes)
    else:
        ax.legend(fontsize=6)
    ax.set_xticks(range(1, k + 1))
    ax.set_xlabel("k (repetitions)")
    ax.set_ylabel("ASR@k")
    ax.set_ylim(0, 1)
    ax.set_title("ASR@k over repetitions")
    return _save(fig, stem)
