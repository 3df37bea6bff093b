"""The overview: blueprints by status and cell, the admitted set, the report's tables, pairs needing a look.

docs/viewer.md, "Overview". The tables are the report's own (``calibration.report.combinations`` over the
records, calibration and each evaluated model x harness apart, only the latest digest and budgets
of each pair counting); every cell names the run list behind it. "Needs a look" joins the
calibration findings ``twinforge status`` lists (stand-in calibration, detector / trajectory
disagreements), failed calibrations, and UNDETERMINED runs and flagged runs from the records.
"""

from __future__ import annotations

from typing import cast

from pydantic import ValidationError

from twinforge.blueprints import BlueprintStore, Status
from twinforge.core.exceptions import TwinforgeError
from twinforge.core.workspace import Workspace
from twinforge.evaluation.cells import admitted_cells
from twinforge.evaluation.report import combinations, latest_runs
from twinforge.evaluation.tables import Combination
from twinforge.runs.attention import attention
from twinforge.runs.metrics import Metrics
from twinforge.runs.records import RunRow
from twinforge.runs.results import CalibrationRecord, RunDetail
from twinforge.viewer import files
from twinforge.viewer.models import Look, MetricsView, Overview, SectionView
from twinforge.viewer.pairs import PairReader
from twinforge.viewer.records import RunFilter, RunRecords

PLOTS = ("asr_by_category.png", "source_bars.png", "asr_at_k.png")
"""The report's plots (calibration/report.py ``build_report``), shown when ``twinforge report`` wrote them."""
MAX_LOOKS = 200
"""Run-level findings listed on the overview (the rest are counted)."""


def _metrics(label: str, metrics: Metrics, runs: dict[str, str]) -> MetricsView:
    return MetricsView(
        label=label,
        pairs=metrics.pairs,
        eligible=metrics.eligible,
        cap=metrics.cap,
        asr=list(metrics.asr),
        incomplete=metrics.incomplete,
        upper=metrics.upper_k,
        runs=runs,
    )


def section_view(section: Combination) -> SectionView:
    """A report combination (calibration, or one model x harness) with the run-list filter behind each row."""
    base = {"purpose": section.purpose, "model": section.model, "harness": section.harness}
    rows = [_metrics("pooled", section.metrics, base)]
    rows += [_metrics(r, m, {**base, "risk": r}) for r, m in section.by_category.items()]
    rows += [_metrics(s, m, {**base, "source": s}) for s, m in section.by_source.items()]
    return SectionView(
        key=RunFilter.of(base).key(),
        title=section.title,
        purpose=section.purpose,
        model=section.model,
        harness=section.harness,
        k=section.k,
        rows=rows,
        reruns=section.reruns,
        most_reruns=section.most_reruns,
    )


def _looks(workspace: Workspace, records: RunRecords) -> list[Look]:
    looks: list[Look] = []
    try:
        looks += [Look(pair=a.pair, kind=a.kind, detail=a.detail) for a in attention(workspace)]
        looks += [
            Look(pair=r.pair, kind="calibration failed", detail=r.reason)
            for r in CalibrationRecord.all(workspace)
            if not r.passed
        ]
    except TwinforgeError as exc:
        looks.append(Look(pair="", kind="unreadable", detail=str(exc)))
    flagged = latest_runs(records.flagged())
    for row in sorted(flagged, key=lambda r: (r.pair, r.purpose, r.side, r.k))[:MAX_LOOKS]:
        where = f"{row.purpose} {row.model}: {row.side} k={row.k}"
        if row.outcome == "UNDETERMINED":
            looks.append(
                Look(
                    pair=row.pair,
                    kind="undetermined",
                    detail=f"{where}: {row.error or 'no valid verdict'}",
                    run_id=row.run_id or "",
                )
            )
        try:
            detail = RunDetail.model_validate(row.detail) if row.detail else None
        except ValidationError:
            detail = None
        for flag in detail.disagreements if detail else []:
            looks.append(Look(pair=row.pair, kind=flag.kind, detail=f"{where}: {flag.detail}", run_id=row.run_id or ""))
    if len(flagged) > MAX_LOOKS:
        looks.append(Look(pair="", kind="more", detail=f"{len(flagged) - MAX_LOOKS} more flagged runs not listed"))
    return looks


def overview(workspace: Workspace, records: RunRecords, pairs: PairReader) -> Overview:
    """The overview of a workspace.

    Args:
        workspace: The workspace.
        records: Its run records (read-only).
        pairs: Its pair reader.
    """
    store = BlueprintStore(workspace)
    taxonomy = store.taxonomy
    counts = {s.value: 0 for s in Status}
    coverage = {r.id: {s.id: 0 for s in taxonomy.sources} for r in taxonomy.risks}
    invalid: dict[str, str] = {}
    for item in store.scan():  # reads the files; the listing index would write .twinforge/index.db
        if item.record is None:
            invalid[item.path.name] = "; ".join(item.error.errors) if item.error else "invalid"
            continue
        counts[item.record.status.value] += 1
        bp = item.record.blueprint
        coverage.setdefault(bp.risk, {}).setdefault(bp.source, 0)
        coverage[bp.risk][bp.source] += 1
    rows = records.outcomes()
    benchmark = pairs.benchmark()
    plots = [name for name in PLOTS if files.inside(workspace.root, "runs", "report", name)]
    return Overview(
        workspace=workspace.root.name,
        counts=counts,
        coverage=coverage,
        sources=[s.id for s in taxonomy.sources],
        invalid_blueprints=invalid,
        pairs=len(pairs.ids()),
        admitted=[
            {"id": e.id, "version": e.version[:12], "model": e.calibration_model, "stand_in": e.stand_in}
            for e in benchmark.pairs
        ],
        # result rows carry RunRow's column names for every column sections() reads (records.outcomes)
        sections=[section_view(c) for c in combinations(cast(list[RunRow], rows), taxonomy, admitted_cells(workspace))],
        looks=_looks(workspace, records),
        runs=len(rows),
        plots=plots,
    )
