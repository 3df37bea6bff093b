"""The per-harness matrix: one case by default, every case with --matrix (tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# the real file, collected in a fresh process (seconds); tests/test_opt_in_options.py checks --matrix in the fast run
pytestmark = pytest.mark.slow
FILE = "tests/harness/test_multiturn_docker.py"
COLLECT = (sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider", "--docker")
"""One process, no cache; --docker: the file needs the engine, which plain pytest leaves out (tests/conftest.py)."""


def collected(*options: str) -> list[str]:
    done = subprocess.run(
        [*COLLECT, *options, FILE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_only_the_kept_case_of_a_matrix_runs_unless_asked() -> None:
    default, everything = collected(), collected("--matrix")
    ignoring = [n for n in default if "test_ignoring_turn_two" in n]
    assert ignoring == [f"{FILE}::test_ignoring_turn_two_is_not_compromised_and_the_twin_not_capable[mini-swe-agent]"]
    assert len([n for n in everything if "test_ignoring_turn_two" in n]) == 5
    assert set(default) < set(everything)
    harm = [n for n in default if "test_harm_after_reading_turn_two" in n]
    assert len(harm) == 5  # resuming is what differs between harnesses: all five by default
