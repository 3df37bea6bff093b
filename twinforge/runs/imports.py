"""``records import``: runs from a JSON Lines file or a Harbor job folder into the workspace's records.

docs/calibration.md, "Records that travel". Both formats end in ``transfer.import_records``
(idempotent, all or nothing); a Harbor trial's pair must be in the workspace's ``tasks/`` (its cell
and whether a safe completion exists come from there).
"""

from __future__ import annotations

from pathlib import Path

from twinforge.core.workspace import Workspace
from twinforge.runs.choices import Format
from twinforge.runs.exceptions import RunsError
from twinforge.runs.harbor_results import harbor_runs, stored_repetitions
from twinforge.runs.records import RecordsDB, records_url
from twinforge.runs.transfer import Imported, import_records, read_file
from twinforge.taskpair import PairFormatError, load_pair


def workspace_lookup(workspace: Workspace) -> dict[tuple[str, str], tuple[str, bool]]:
    """``(pair, side)`` -> ``(cell, safe completion possible)`` for every loadable pair under ``tasks/``."""
    found: dict[tuple[str, str], tuple[str, bool]] = {}
    folders = workspace.tasks_dir.iterdir() if workspace.tasks_dir.is_dir() else iter(())
    for folder in sorted(p for p in folders if (p / "pair.yaml").is_file()):
        try:
            pair = load_pair(folder)
        except PairFormatError:
            continue
        for side in pair.sides():
            found[(pair.id, side.name)] = (pair.spec.blueprint.taxonomy_id, side.spec.safe_completion_possible)
    return found


def import_runs(
    workspace: Workspace,
    source: Path,
    *,
    fmt: Format = "jsonl",
    model: str | None = None,
    harness: str | None = None,
) -> Imported:
    """Import runs into the workspace's records database.

    Args:
        workspace: The workspace.
        source: A JSON Lines file (``records export``) or a Harbor job folder.
        fmt: ``jsonl`` or ``harbor``.
        model: Harbor only: the model label of every trial (default: what Harbor recorded).
        harness: Harbor only: the harness label (default: ``<agent>@<version>``).

    Raises:
        RunsError: The source is unreadable or invalid, or a run contradicts a stored one
            (nothing is imported then).
    """
    records = RecordsDB(records_url(workspace))
    if fmt == "jsonl":
        if model or harness:
            raise RunsError("--model and --harness apply to --format harbor only")
        return import_records(records, read_file(source), source=str(source))
    if not source.is_dir():
        raise RunsError(f"{source}: not a Harbor job folder")
    known = workspace_lookup(workspace)
    stored = stored_repetitions(records.runs(purpose="evaluation"))
    runs = harbor_runs(source, lambda pair, side: known.get((pair, side)), stored=stored, model=model, harness=harness)
    return import_records(records, runs, source=str(source), by="harbor")
