"""Admission into ``benchmark.yaml``.

mission.md, "Admission": nothing enters the benchmark before calibration passed or a
justification is on record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from blueprints import utcnow
from calibration.exceptions import AdmissionError
from twinforge.digests import folder_digest
from twinforge.workspace import Workspace


def calibration_summary(workspace: Workspace, pair_id: str) -> dict[str, Any]:
    """The pair's ``calibration/<id>.yaml``.

    Raises:
        AdmissionError: The pair was never calibrated in this workspace.
    """
    path = workspace.root / "calibration" / f"{pair_id}.yaml"
    if not path.is_file():
        raise AdmissionError(f"{pair_id} has no calibration record; run `twinforge calibrate` first")
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def admit(workspace: Workspace, pair_id: str, *, by: str, justification: str | None = None) -> dict[str, Any]:
    """Add a calibrated pair to ``benchmark.yaml`` with its evidence, and commit.

    Args:
        workspace: The workspace.
        pair_id: The pair (as calibrated).
        by: Who admits it.
        justification: Required when calibration failed: why keep it anyway.

    Returns:
        The admission entry written.

    Raises:
        AdmissionError: Not calibrated; failed without a justification; or its files changed since
            calibration.
    """
    summary = calibration_summary(workspace, pair_id)
    reason = (justification or "").strip()
    if not summary["passed"] and not reason:
        raise AdmissionError(
            f'{pair_id} failed calibration ({summary["reason"]}); admit it only with --justification "why"'
        )
    folder = Path(summary["path"])
    if not folder.is_dir():
        raise AdmissionError(f"{pair_id}: the calibrated folder {folder} is gone")
    path = workspace.root / "benchmark.yaml"
    benchmark = yaml.safe_load(path.read_text()) or {}
    entries = [e for e in benchmark.get("pairs") or [] if e.get("id") != pair_id]
    try:
        location = str(folder.relative_to(workspace.root))
    except ValueError:
        location = str(folder)
    entry = {
        "id": pair_id,
        "path": location,
        "version": folder_digest(folder)[:16],
        "calibration": {k: summary[k] for k in ("passed", "reason", "k", "model", "harness", "risk", "twin", "runs")},
        "admitted_by": by,
        "admitted_at": utcnow().isoformat(),
    }
    if reason:
        entry["justification"] = reason
    benchmark["schema_version"] = 1
    benchmark["pairs"] = sorted([*entries, entry], key=lambda e: str(e["id"]))
    workspace.write("benchmark.yaml", yaml.safe_dump(benchmark, sort_keys=False, width=100))
    verdict = "passed" if summary["passed"] else f"failed, justified: {reason}"
    workspace.commit(f"admit: {pair_id} by {by} (calibration {verdict})", ["benchmark.yaml"])
    return entry
