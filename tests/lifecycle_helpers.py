"""Workspace helpers for lifecycle tests: copy a reference pair into tasks/ and record a gate result."""

from __future__ import annotations

import shutil
from pathlib import Path

from taskpair import load_pair
from taskpair.gate.report import CheckResult, PairReport
from taskpair.recording import Recorded, record_validation
from twinforge.workspace import Workspace

REFERENCE = Path(__file__).resolve().parents[1] / "guidelines" / "reference-pairs"


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
