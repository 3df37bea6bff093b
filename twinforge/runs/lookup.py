"""Run ids to evidence folders through the workspace's records (``twinforge diagnose RUN_ID``, ``trajectory``).

A run id is looked up in the records database first (its ``evidence_dir``: calibration, evaluation
and scripted runs alike, wherever their evidence lives), then under ``runs/`` and ``runs/scripted/``
(evidence of runs whose record is elsewhere; docs/observer.md, "One trajectory format").
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from twinforge.core.workspace import Workspace
from twinforge.observer.diagnose import RunLookup, runs_folder_lookup
from twinforge.runs.exceptions import RunsError
from twinforge.runs.records import RecordsDB, RunRow, records_url


def evidence_of(records: RecordsDB, run_id: str) -> Path | None:
    """The evidence folder a finished record names for ``run_id`` (``None``: no such record or folder)."""
    try:
        with Session(records.engine) as session:
            found = session.scalars(
                select(RunRow.evidence_dir).where(RunRow.run_id == run_id, RunRow.status == "done")
            ).first()
    except SQLAlchemyError:
        return None
    folder = Path(found) if found else None
    return folder if folder is not None and folder.is_dir() else None


def records_lookup(workspace: Workspace) -> RunLookup:
    """A run-id lookup through the workspace's records, falling back to its ``runs/`` folders."""
    folders = runs_folder_lookup(workspace.root / "runs")
    opened: list[RecordsDB] = []

    def lookup(run_id: str) -> Path | None:
        if not run_id or "/" in run_id or run_id.startswith("."):
            return None
        try:
            records = opened[0] if opened else RecordsDB(records_url(workspace))
        except RunsError:
            return folders(run_id)
        opened[:] = [records]
        return evidence_of(records, run_id) or folders(run_id)

    return lookup
