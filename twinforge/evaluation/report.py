"""``twinforge report``: the reference study's tables and figures from the run records.

docs/calibration.md, "Report". Calibration runs and each evaluated model x harness are kept apart
(never pooled together). Per pair, purpose, model and harness only the runs of its latest pair
digest and budgets count, each with its newest verdict. The evaluated set of every evaluation
combination is the admitted set plus every pair any evaluation record names, so CAP's denominator
is the whole set. The computed :class:`Report` is one typed model: ``report --json`` prints it, the
Markdown, HTML and CSV files render the same tables (:mod:`twinforge.evaluation.tables`), and the
figures come in PNG and SVG (:mod:`twinforge.evaluation.plots`).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined
from pydantic import ValidationError

from twinforge.blueprints import Attention, BuiltPair, Taxonomy, load_taxonomy
from twinforge.evaluation import plots
from twinforge.evaluation.model import Report
from twinforge.evaluation.tables import (
    Combination,
    Cost,
    ModelCategories,
    Stability,
    by_ids,
    by_source_category,
    compare,
    incomplete_pairs,
    matrix,
    model_categories,
    pooled_stability,
    source_gaps,
)
from twinforge.evaluation.texttables import TextTable, text_tables
from twinforge.evaluation.turns import turn_stats
from twinforge.harness.run_model import RunModelRecord, SettingsUsed, ShapesUsed
from twinforge.runs.metrics import PairRuns, compute
from twinforge.runs.records import RecordsDB, RunRow
from twinforge.runs.rules import is_capable, is_undetermined, outcome

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
REPORTED = ("calibration", "evaluation")
"""Purposes the report counts (scripted runs are an author's tests: the viewer shows them, no table does)."""
UNKNOWN_CAUSE = "unknown"
"""A twin run that was not CAPABLE and whose record holds no cause (stored by an earlier release, imported)."""


def miss_cause(row: RunRow) -> str:
    """Why a twin run was not CAPABLE, from its record's diagnosis (the overview's plain rows carry no detail)."""
    detail = getattr(row, "detail", None)
    diagnosis = detail.get("diagnosis") if isinstance(detail, dict) else None
    cause = diagnosis.get("cause") if isinstance(diagnosis, dict) else None
    return cause if isinstance(cause, str) and cause else UNKNOWN_CAUSE


def latest_runs(rows: list[RunRow]) -> list[RunRow]:
    """Per purpose, pair, model and harness: only the runs of the digest and budgets used last."""
    groups: dict[tuple[str, str, str, str], dict[tuple[str, str], list[RunRow]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for row in rows:
        groups[(row.purpose, row.pair, row.model, row.harness)][(row.digest, row.budgets)].append(row)
    out: list[RunRow] = []
    for versions in groups.values():
        out += max(versions.values(), key=lambda runs: max(_finished(r) for r in runs))
    return out


def _finished(row: RunRow) -> datetime:
    at = row.finished_at or _EPOCH
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def model_use(row: RunRow) -> RunModelRecord | None:
    """What a finished run's model calls used (settings, shapes, tokens, cost; ``RunDetail.model_use``).

    ``None`` for a record of an earlier release, one whose record no longer validates, or a row read
    without its ``detail`` column (the viewer's overview reads only the columns it counts).
    """
    detail = getattr(row, "detail", None)
    found = detail.get("model_use") if isinstance(detail, dict) else None
    if not isinstance(found, dict):
        return None
    try:
        return RunModelRecord.model_validate(found)
    except ValidationError:
        return None


def _cost(rows: list[RunRow]) -> Cost:
    """Calls, tokens, hours and cost of some runs; the cost is ``None`` when none of them had a price."""
    uses = [u for u in map(model_use, rows) if u is not None]
    priced = [u.cost_usd for u in uses if u.cost_usd is not None]
    return Cost(
        records=len(rows),
        calls=sum(r.calls or 0 for r in rows),
        prompt_tokens=sum(r.prompt_tokens or 0 for r in rows),
        completion_tokens=sum(r.completion_tokens or 0 for r in rows),
        hours=sum(r.seconds or 0.0 for r in rows) / 3600,
        cached_tokens=sum(u.usage.cached_tokens for u in uses),
        cost_usd=sum(priced) if priced else None,
    )


def _settings(rows: list[RunRow]) -> tuple[list[SettingsUsed], list[ShapesUsed], dict[str, Cost]]:
    """The distinct settings and shapes of some runs, and the cost of each pair's runs."""
    settings: list[SettingsUsed] = []
    shapes: list[ShapesUsed] = []
    by_pair: dict[str, list[RunRow]] = defaultdict(list)
    for row in rows:
        by_pair[row.pair].append(row)
        use = model_use(row)
        if use is None:
            continue
        settings += [use.settings] if use.settings not in settings else []
        shapes += [s for s in use.shapes if s not in shapes]
    return settings, shapes, {pair: _cost(runs) for pair, runs in sorted(by_pair.items())}


def combinations(
    rows: list[RunRow],
    taxonomy: Taxonomy | None = None,
    evaluated: dict[str, tuple[str, str]] | None = None,
) -> list[Combination]:
    """One combination per purpose, model and harness; calibration first.

    Args:
        rows: Finished run records.
        taxonomy: Category and source ids in order (default: the packaged taxonomy).
        evaluated: The admitted set, pair id -> ``(source, risk category)``: pairs every evaluation
            combination counts in its denominator even without runs.
    """
    taxonomy = taxonomy or load_taxonomy()
    risks, sources = taxonomy.risk_ids(), [s.id for s in taxonomy.sources]
    found: dict[tuple[str, str, str], dict[str, PairRuns]] = defaultdict(dict)
    k_of: dict[tuple[str, str, str], int] = defaultdict(int)
    reruns: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    misses: dict[tuple[str, str, str], dict[str, int]] = defaultdict(dict)
    rows = [r for r in rows if r.purpose in REPORTED]
    latest: dict[tuple[str, str, str], list[RunRow]] = defaultdict(list)
    for r in latest_runs(rows):
        key = (r.purpose, r.model, r.harness)
        latest[key].append(r)
        reruns[key].append(max((r.attempts or 1) - 1, 0))
        if r.side == "twin" and not is_capable(r.outcome):
            cause = miss_cause(r)
            misses[key][cause] = misses[key].get(cause, 0) + 1
        item = found[key].setdefault(
            r.pair, PairRuns(pair=r.pair, risk_category=r.risk, source=r.source, model=r.model, harness=r.harness)
        )
        value = outcome(r.outcome)
        (item.risk if r.side == "risk" else item.twin)[r.k] = value
        if is_undetermined(value):
            item.causes[f"{r.side} k={r.k}"] = r.error or "no valid verdict"
        k_of[key] = max(k_of[key], r.runs or 0, r.k)
    universe = dict(evaluated or {})
    for (purpose, _, _), pairs in found.items():
        if purpose == "evaluation":
            universe.update({p.pair: (p.source, p.risk_category) for p in pairs.values()})
    costs: dict[tuple[str, str, str], list[RunRow]] = defaultdict(list)
    for r in rows:
        costs[(r.purpose, r.model, r.harness)].append(r)
    out = []
    for key in sorted(found, key=lambda x: (x[0] != "calibration", x)):
        purpose, model, harness = key
        pairs = found[key]
        if purpose == "evaluation":
            for pair_id, (source, risk) in universe.items():
                pairs.setdefault(
                    pair_id, PairRuns(pair=pair_id, risk_category=risk, source=source, model=model, harness=harness)
                )
        runs = sorted(pairs.values(), key=lambda p: p.pair)
        k = k_of[key]
        metrics = compute(runs, k)
        settings, shapes, pair_costs = _settings(latest[key])
        out.append(
            Combination(
                purpose="evaluation" if purpose == "evaluation" else "calibration",
                model=model,
                harness=harness,
                k=k,
                pairs=metrics.pairs,
                eligible=metrics.eligible,
                cap=metrics.cap,
                asr=list(metrics.asr),
                metrics=metrics,
                by_category=by_ids(runs, k, risks, "risk_category"),
                by_source=by_ids(runs, k, sources, "source"),
                by_source_category=by_source_category(runs, k, risks, sources),
                stability=Stability.of(runs, k),
                cost=_cost(costs[key]),
                incomplete=incomplete_pairs(runs, k),
                runs=runs,
                reruns=sum(reruns[key]),
                most_reruns=max(reruns[key], default=0),
                misses=dict(sorted(misses[key].items())),
                settings=settings,
                shapes=shapes,
                pair_costs=pair_costs,
            )
        )
    return out


def _notes(rows: list[RunRow]) -> tuple[list[str], list[str]]:
    undetermined, disagreements = [], []
    for r in latest_runs(rows):
        where = f"{r.purpose} {r.model} / {r.harness}: {r.pair} {r.side} k={r.k}"
        if is_undetermined(r.outcome):
            undetermined.append(f"{where}: {r.error or 'no valid verdict'}")
        finished = r.finished()
        for flag in finished.detail.disagreements if finished and finished.detail else []:
            disagreements.append(f"{where}: {flag.kind}: {flag.detail}")
    return undetermined, disagreements


def compute_report(
    rows: list[RunRow],
    *,
    taxonomy: Taxonomy | None = None,
    evaluated: dict[str, tuple[str, str]] | None = None,
    attention: list[Attention] | None = None,
    compare_names: tuple[str, str] | None = None,
    per_combination: bool = False,
    verdicts_changed: int = 0,
) -> Report:
    """The report's tables from finished run records (no files written).

    Raises:
        ValueError: ``compare_names`` are not two evaluated models or two harnesses.
    """
    taxonomy = taxonomy or load_taxonomy()
    risks, sources = taxonomy.risk_ids(), [s.id for s in taxonomy.sources]
    rows = [r for r in rows if r.purpose in REPORTED]
    found = combinations(rows, taxonomy, evaluated)
    evaluation = [c for c in found if c.purpose == "evaluation"]
    undetermined, disagreements = _notes(rows)
    return Report(
        risks=risks,
        sources=sources,
        combinations=evaluation,
        calibration=[c for c in found if c.purpose == "calibration"],
        matrix=matrix(evaluation),
        models=source_gaps(evaluation, sources),
        categories=model_categories(evaluation, risks, sources),
        combination_categories=[
            ModelCategories(model=c.model, harness=c.harness, k=c.k, by_source_category=c.by_source_category)
            for c in evaluation
        ]
        if per_combination
        else [],
        stability=pooled_stability(evaluation),
        comparison=compare(evaluation, *compare_names) if compare_names else None,
        undetermined=undetermined,
        disagreements=disagreements,
        attention=list(attention or []),
        verdicts_changed=verdicts_changed,
        turns=turn_stats(latest_runs(rows), found),
    )


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in text)


def _plots(report: Report, out: Path) -> dict[str, list[Path]]:
    """Write every figure; returns figure title -> its files (PNG, SVG)."""
    figures: dict[str, list[Path]] = {}
    # the calibration model stands in for an evaluation when nothing was evaluated yet
    shown = report.combinations or report.calibration
    gaps = report.models or source_gaps(report.calibration, report.sources)
    figures["S1 vs S2 ASR@k per model"] = plots.source_gap_plot(gaps, report.sources, out / "source_gap")
    radars = report.categories or model_categories(report.calibration, report.risks, report.sources)
    for index, item in enumerate([*radars, *report.combination_categories]):
        where = f" / {item.harness}" if item.harness else ""
        stem = out / f"radar-{index + 1}-{_slug(item.model + where)}"
        figures[f"ASR@{item.k} by risk category: {item.model}{where}"] = plots.radar(item, report.risks, stem)
    stability = report.stability or pooled_stability(report.calibration)
    figures["ASR@k over repetitions"] = plots.stability_plot(stability, shown, out / "stability")
    return figures


def _write_csv(table: TextTable, path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(table.header)
        writer.writerows(table.rows)


def build_report(
    records: RecordsDB,
    out: Path,
    attention: list[Attention] | None = None,
    taxonomy: Taxonomy | None = None,
    *,
    evaluated: dict[str, tuple[str, str]] | None = None,
    compare_names: tuple[str, str] | None = None,
    per_combination: bool = False,
    pairs: list[BuiltPair] | None = None,
) -> Report:
    """Compute the report and write ``report.md``, ``report.html``, ``report.json``, one CSV per table and the figures.

    Args:
        records: The records database.
        out: Output folder (created).
        attention: Pairs needing a look.
        taxonomy: The workspace's merged taxonomy (default: the packaged one); an id without
            eligible pairs is drawn and listed as "no data".
        evaluated: The admitted set (pair id -> ``(source, risk)``), counted in every evaluation
            combination's denominator.
        compare_names: Two models or two harnesses to compare.
        per_combination: Also draw a radar per combination.
        pairs: The workspace's ``built_pairs``: each pair's fidelity joins the per-pair table, and
            the "What the pairs are" table says what built them and every adapted pair's differences.

    Raises:
        ValueError: ``compare_names`` are not two evaluated models or two harnesses.
    """
    rows = records.runs(status="done")
    report = compute_report(
        rows,
        taxonomy=taxonomy,
        evaluated=evaluated,
        attention=attention,
        compare_names=compare_names,
        per_combination=per_combination,
        verdicts_changed=records.verdicts_changed(),
    )
    report.pairs = list(pairs or [])
    out.mkdir(parents=True, exist_ok=True)
    figures = _plots(report, out)
    tables = text_tables(report)
    files: list[Path] = [p for paths in figures.values() for p in paths]
    for table in tables:
        path = out / f"{table.name}.csv"
        _write_csv(table, path)
        files.append(path)
    env = Environment(
        loader=PackageLoader("twinforge.evaluation", "templates"),
        undefined=StrictUndefined,
        autoescape=lambda name: bool(name and name.endswith(".html.j2")),  # agent text must not become markup
        trim_blocks=True,
        lstrip_blocks=True,
    )
    figure_files = {title: {p.suffix.lstrip("."): p.name for p in paths} for title, paths in figures.items()}
    for name in ("report.md", "report.html"):
        target = out / name
        target.write_text(
            env.get_template(f"{name}.j2").render(report=report, tables=tables, figures=figure_files), encoding="utf-8"
        )
        files.append(target)
    files.append(out / "report.json")
    report.files = [str(p) for p in files]
    (out / "report.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")
    return report
