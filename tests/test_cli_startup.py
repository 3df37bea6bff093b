"""Every ``twinforge`` process starts cheap (docs/design.md, "Command-line start-up").

The command tree is built from typer, rich and light modules only; each command imports its
implementation when it runs. These tests read which modules ``python -X importtime`` reports for
``--help`` (module names, never times: bench/cli_startup.py measures the times).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import heavy_packages, importtime_rows

IMPLEMENTATION = {
    "twinforge.core.workspace",
    "twinforge.core.settings",
    "twinforge.blueprints.store",
    "twinforge.blueprints.checks",
    "twinforge.observer.shell",
    "twinforge.harness.registry",
    "twinforge.taskpair.runtime.engine",
    "twinforge.runs.records",
    "twinforge.calibration.calibrate",
}
"""Our own modules that load those packages (or the workspace), named so a failure points at the culprit."""

INVOCATIONS = (
    (),
    ("init",),
    ("status",),
    ("blueprint", "add"),
    ("generate",),
    ("review",),
    ("queue",),
    ("new-pair",),
    ("validate",),
    ("run",),
    ("calibrate",),
    ("admit",),
    ("evaluate",),
    ("report",),
    ("redetect",),
    ("implement",),
    ("diagnose",),
    ("export",),
    ("view",),
    ("model", "serve"),
    ("env", "setup"),
    ("taxonomy", "list"),
    ("harness", "setup"),
    ("records", "export"),
    ("records", "import"),
)


def imported_modules(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``python -X importtime -m twinforge ARGS`` and return it with the names of the modules it imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "twinforge", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=120,
    )
    return done, {name for _, name in importtime_rows(done.stderr)}


@pytest.mark.parametrize("command", INVOCATIONS, ids=lambda c: " ".join(c) or "twinforge")
def test_help_imports_no_implementation(command: tuple[str, ...], tmp_path: Path) -> None:
    done, names = imported_modules(*command, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Usage:" in done.stdout
    assert "twinforge.cli" in names  # the report is read: an empty one would pass the check below
    heavy = heavy_packages(names)
    assert heavy == [], f"`twinforge {' '.join(command)} --help` imported {heavy}"
    assert sorted(names & IMPLEMENTATION) == []


def test_a_command_imports_its_implementation_when_it_runs(tmp_path: Path) -> None:
    # The other side of the rule: running a command does import what it works with (here the
    # workspace's git repository), so the check above is about start-up, not about lost imports.
    done, names = imported_modules("status", cwd=tmp_path)
    assert done.returncode == 1 and "workspace" in done.stderr.lower()
    assert "git" in {name.split(".")[0] for name in names}
