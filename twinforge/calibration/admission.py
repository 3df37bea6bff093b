"""Admission into ``benchmark.yaml`` (docs/calibration.md, "Admission").

Nothing enters the benchmark before calibration passed or a justification is on record. ``admit``
checks that the pair folder still has the digest it was validated and calibrated with, carries the
whole calibration record (model, harness, budgets and any call cap, K, outcomes, flags) into the
benchmark entry, names the calibration model and whether it was a stand-in, and moves the pair's
blueprint to ``admitted``, in one commit.
"""

from __future__ import annotations

from twinforge.blueprints import (
    BlueprintStore,
    Commit,
    InvalidTransition,
    LifecycleMove,
    Moved,
    Status,
    built_pairs,
    near_duplicate_pairs,
    utcnow,
)
from twinforge.calibration.exceptions import AdmissionError
from twinforge.core.workspace import Workspace
from twinforge.runs.exceptions import RunsError
from twinforge.runs.results import AdmissionEntry, Benchmark, CalibrationRecord
from twinforge.taskpair import PairFormatError, load_pair
from twinforge.taskpair.format.digest import pair_digest


def admit(workspace: Workspace, pair_id: str, *, by: str, justification: str | None = None) -> AdmissionEntry:
    """Add a calibrated pair to ``benchmark.yaml`` with its whole calibration record, and commit.

    Args:
        workspace: The workspace.
        pair_id: The pair (as calibrated).
        by: Who admits it.
        justification: Required when calibration failed: why keep it anyway.

    Returns:
        The admission entry written.

    Raises:
        AdmissionError: Not calibrated; failed without a justification; its folder is gone or
            changed since calibration (digest); or its blueprint cannot move to ``admitted``.
    """
    try:
        record = CalibrationRecord.read(workspace, pair_id)
    except RunsError as exc:
        raise AdmissionError(str(exc)) from exc
    reason = (justification or "").strip()
    if not record.passed and not reason:
        raise AdmissionError(
            f'{pair_id} failed calibration ({record.reason}); admit it only with --justification "why"'
        )
    folder = workspace.root / record.path
    try:
        pair = load_pair(folder)
        digest = pair_digest(folder)
    except PairFormatError as exc:
        raise AdmissionError(f"{pair_id}: the calibrated folder {folder} does not load: {exc}") from exc
    if digest != record.digest:
        raise AdmissionError(
            f"{pair_id} changed since it was calibrated (digest {record.digest[:12]} -> {digest[:12]}); "
            f"validate and calibrate it again"
        )
    entry = AdmissionEntry(
        id=pair_id,
        path=record.path,
        version=digest,
        calibration_model=record.model.label,
        stand_in=record.model.stand_in,
        calibration=record,
        admitted_by=by,
        admitted_at=utcnow(),
        justification=reason or None,
    )
    verdict = "passed" if record.passed else f"failed, justified: {reason}"
    model = f"{record.model.label}{' (stand-in)' if record.model.stand_in else ''}"

    def write_benchmark() -> list[str]:
        benchmark = Benchmark.read(workspace)
        benchmark.pairs = [e for e in benchmark.pairs if e.id != pair_id] + [entry]
        return [str(benchmark.write(workspace).relative_to(workspace.root))]

    def message(moved: Moved) -> str:
        change = f"; {moved.blueprint_id} -> admitted" if moved.moved else ""
        head = f"admit: {pair_id} by {by} (calibration {verdict}){change}"
        return f"{head}\n\ncalibration model: {model}\nversion: {digest}"

    try:
        BlueprintStore(workspace).apply(
            LifecycleMove(
                pair.spec.blueprint_id,
                Status.ADMITTED,
                action="admit",
                by=by,
                commit=Commit(message),
                reason=reason or record.reason,
                write=write_benchmark,
                tolerate=frozenset({"absent"}),  # a pair whose blueprint lives elsewhere (e.g. a copied reference pair)
            )
        )
    except InvalidTransition as exc:
        raise AdmissionError(f"{pair_id}: {exc}") from exc
    return entry


def spread_warnings(workspace: Workspace, pair_id: str) -> list[str]:
    """What admitting ``pair_id`` did to the admitted set's variety (docs/implementer.md, "Variety").

    Warnings, never refusals: the pair is admitted either way.

    - One archetype built more than ``[calibration] max_archetype_share`` of the admitted pairs,
      once the set holds at least ``archetype_share_from`` pairs.
    - The pair's slot fill is near-identical to an admitted pair of the same archetype and cell
      (``[implementer] near_duplicate_slots``).

    Returns:
        One line per warning, naming the archetype or the other pair.
    """
    settings = workspace.config
    pairs = built_pairs(workspace)
    admitted = [p for p in pairs if p.admitted]
    out: list[str] = []
    if len(admitted) >= settings.calibration.archetype_share_from:
        counts: dict[str, int] = {}
        for p in admitted:
            if p.built_by.startswith("archetype:"):
                counts[p.built_by] = counts.get(p.built_by, 0) + 1
        for by, n in sorted(counts.items()):
            share = n / len(admitted)
            if share > settings.calibration.max_archetype_share:
                out.append(
                    f"{by} built {n} of {len(admitted)} admitted pairs ({100 * share:.0f} %), above "
                    f"[calibration] max_archetype_share = {settings.calibration.max_archetype_share:.2f}"
                )
    for d in near_duplicate_pairs(admitted, settings.implementer.near_duplicate_slots):
        if pair_id in (d.pair, d.of):
            other = d.of if d.pair == pair_id else d.pair
            out.append(
                f"{pair_id} is a near-duplicate of admitted {other}: both rendered from {d.built_by} for one cell "
                f"with slot values {d.similarity:.0f} % alike"
            )
    return out
