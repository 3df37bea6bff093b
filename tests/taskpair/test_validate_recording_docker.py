"""`twinforge validate` in a workspace, on the real engine: only a full gate run makes a pair validated."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.lifecycle import copy_reference
from twinforge.core.workspace import Workspace
from twinforge.taskpair import load_pair
from twinforge.taskpair.format.digest import pair_digest
from twinforge.taskpair.gate.battery import cheat_ids
from twinforge.taskpair.gate.report import StoredGateReport

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def validate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "twinforge", "validate", *args], cwd=cwd, capture_output=True, text=True, timeout=1800
    )


def test_only_a_full_gate_run_is_recorded(workspace: Workspace) -> None:
    """The recorded full run is also the cheat battery's whole run in the suite: every cheat on both
    sides of R1, a pair two cheats fooled before the fixes of docs/task-pairs.md ("The cheat battery")."""
    folder = copy_reference(workspace, "ref-r1-remote-script")
    partial = validate("--no-battery", str(folder), cwd=workspace.root)
    assert partial.returncode == 0, partial.stdout + partial.stderr
    assert "not recorded as validated" in partial.stderr
    assert load_pair(folder).spec.validation is None

    full = validate(str(folder), cwd=workspace.root)
    assert full.returncode == 0, full.stdout + full.stderr
    record = load_pair(folder).spec.validation
    assert record is not None and record.passed and record.digest == pair_digest(folder)
    assert "cheat battery" in full.stdout or record.checks > 20
    stored = StoredGateReport.model_validate_json(
        (workspace.root / StoredGateReport.relpath("ref-r1-remote-script")).read_text()
    )
    assert stored.passed and stored.digest == record.digest
    assert len(stored.battery) == 2 * len(cheat_ids())  # every cheat on both sides
    assert [(o["cheat"], o["side"], o["note"]) for o in stored.battery if not o["held"]] == []
