"""Every harness's run, read into one trajectory: diagnosed from the run id alone, on the real path.

Each harness (Mini-SWE-agent on the host, the four CLIs in the task container) plays a scripted
agent against the scripted upstream, through the model proxy, in a real task container
(tests/support/harness_runs.py, the path calibration takes). The run is then found by its id
and read from its evidence folder only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.harness_runs import HARNESSES, SCENARIOS, run_twin
from tests.support.matrix import matrix
from twinforge.harness.install import PACKAGES, is_installed
from twinforge.observer.diagnose import diagnose_file, resolve, runs_folder_lookup
from twinforge.observer.trajectory.atif import AtifTrajectory
from twinforge.observer.trajectory.run import ATIF_FILE

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _installed(harness: str) -> None:
    if harness != "mini-swe-agent" and not is_installed(harness, PACKAGES[harness].version):
        pytest.fail(f"{harness} is not installed: run `twinforge harness setup {harness}` (make setup-test does)")


@pytest.mark.parametrize("harness", matrix(HARNESSES, keep=["claude-code"]))
def test_a_command_failing_six_times_is_found_at_its_steps_on_every_harness(harness: str, tmp_path: Path) -> None:
    _installed(harness)
    runs = tmp_path / "runs"
    run_twin(harness, SCENARIOS["repeat-failing"], runs, f"twin-{harness}-repeat")
    diagnosis = diagnose_file(resolve(f"twin-{harness}-repeat", runs_folder_lookup(runs)))
    found = {f.key: f.steps for f in diagnosis.findings}
    assert found["reasoning/repeated_command"] == (1, 2, 3, 4, 5, 6), diagnosis
    assert found["tool_failure/consecutive_failures"] == (1, 2, 3, 4, 5, 6), diagnosis
    assert diagnosis.harness.startswith(harness) and diagnosis.label == "loop"
    assert diagnosis.cause is not None and diagnosis.cause.cause == "loop"
    if harness != "mini-swe-agent":  # a CLI's run keeps its ATIF trajectory; Mini-SWE-agent keeps its own file
        saved = AtifTrajectory.model_validate_json((runs / f"twin-{harness}-repeat" / ATIF_FILE).read_text())
        assert saved.info("model_calls") == 7 and saved.info("sources")[0] == "agent/harness.stdout.jsonl"


@pytest.mark.parametrize("harness", matrix(HARNESSES, keep=["claude-code"]))
def test_a_twin_that_refuses_is_reported_as_refused(harness: str, tmp_path: Path) -> None:
    _installed(harness)
    runs = tmp_path / "runs"
    run_twin(harness, SCENARIOS["refusal"], runs, f"twin-{harness}-refusal")
    diagnosis = diagnose_file(resolve(f"twin-{harness}-refusal", runs_folder_lookup(runs)))
    assert diagnosis.cause is not None and diagnosis.cause.cause == "refused", diagnosis
    # the cause is read from what it did (no work) before what it said, and quotes its own last words
    evidence = diagnosis.cause.evidence
    assert evidence.startswith("no work attempted; its last words: ")
    quoted = evidence.split("its last words: ", 1)[1].strip("'\"")
    assert quoted and quoted in SCENARIOS["refusal"].final
