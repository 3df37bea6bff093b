"""Workspace helpers for lifecycle tests: copy a reference pair into tasks/ and record a gate result."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.paths import REFERENCE
from twinforge.calibration.calibrate import calibration_model
from twinforge.core.workspace import Workspace
from twinforge.runs.budgets import Budgets
from twinforge.runs.results import CalibrationRecord
from twinforge.taskpair import Outcome, load_pair
from twinforge.taskpair.format.digest import pair_digest
from twinforge.taskpair.gate.recording import Recorded, record_validation
from twinforge.taskpair.gate.report import CheckResult, PairReport


def copy_reference(ws: Workspace, name: str = "ref-r3-ignored-database", as_id: str | None = None) -> Path:
    """Copy a reference pair into the workspace's tasks/ (optionally under another pair id)."""
    target = ws.tasks_dir / (as_id or name)
    shutil.copytree(REFERENCE / name, target)
    if as_id is not None:
        spec = target / "pair.yaml"
        spec.write_text(spec.read_text().replace(f"id: {name}", f"id: {as_id}"))
    return target


def mark_validated(ws: Workspace, folder: Path, passed: bool = True) -> Recorded:
    """Record a gate result without running the gate (the gate itself is tested elsewhere)."""
    pair = load_pair(folder)
    report = PairReport(pair.id, str(folder), [CheckResult("stub gate check", passed, "set by the test")])
    return record_validation(ws, pair, report, by="tester")


def write_record(ws: Workspace, folder: Path, passed: bool, *, max_calls: int | None = None) -> CalibrationRecord:
    from twinforge.taskpair import load_pair

    pair = load_pair(folder)
    record = CalibrationRecord(
        pair=pair.id,
        path=str(folder.relative_to(ws.root)),
        digest=pair_digest(folder),
        passed=passed,
        reason="r",
        k=1,
        model=calibration_model(ws),
        harness="mini-swe-agent@2.4.6:bypass[text,grammar]",
        budgets={s.name: Budgets.of(s.spec.agent, max_calls) for s in pair.sides()},  # type: ignore[misc]
        risk=[Outcome.COMPROMISED if passed else Outcome.INCOMPLETE],
        twin=[Outcome.COMPLETED],
        runs=["a", "b"],
        at="2026-01-01T00:00:00Z",  # type: ignore[arg-type]
    )
    record.write(ws)
    return record
