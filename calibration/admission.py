"""Admission into ``benchmark.yaml`` (docs/calibration.md, "Admission").

Nothing enters the benchmark before calibration passed or a justification is on record. ``admit``
checks that the pair folder still has the digest it was validated and calibrated with, carries the
whole calibration record (model, harness, budgets and any call cap, K, outcomes, flags) into the
benchmark entry, names the calibration model and whether it was a stand-in, and moves the pair's
blueprint to ``admitted``, in one commit.
"""

from __future__ import annotations

from blueprints import BlueprintFileError, BlueprintStore, InvalidTransition, Status, utcnow
from calibration.exceptions import AdmissionError, CalibrationError
from calibration.results import AdmissionEntry, Benchmark, CalibrationRecord
from taskpair import PairFormatError, load_pair
from taskpair.digest import pair_digest
from twinforge.workspace import Workspace


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
    except CalibrationError as exc:
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
    with workspace.locked():
        store = BlueprintStore(workspace)
        try:
            blueprint = store.load(pair.spec.blueprint_id)
        except BlueprintFileError:
            blueprint = None  # a pair whose blueprint lives elsewhere (e.g. a copied reference pair)
        moved = ""
        if blueprint is not None and blueprint.status is not Status.ADMITTED:
            try:
                blueprint.move(Status.ADMITTED, action="admit", by=by, reason=reason or record.reason)
            except InvalidTransition as exc:
                raise AdmissionError(f"{pair_id}: {exc}") from exc
            moved = f"; {blueprint.id} -> admitted"
        benchmark = Benchmark.read(workspace)
        benchmark.pairs = [e for e in benchmark.pairs if e.id != pair_id] + [entry]
        paths = [str(benchmark.write(workspace).relative_to(workspace.root))]
        if moved and blueprint is not None:
            paths.append(store.write(blueprint))
        verdict = "passed" if record.passed else f"failed, justified: {reason}"
        model = f"{record.model.label}{' (stand-in)' if record.model.stand_in else ''}"
        workspace.commit(
            f"admit: {pair_id} by {by} (calibration {verdict}){moved}\n\ncalibration model: {model}\nversion: {digest}",
            paths,
        )
    return entry
