"""The recorded runs of all five harnesses (tests/data/harness-runs): one ATIF trajectory each, the
rules and the twin causes on it, run ids, and the ATIF export."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.harness_runs import HARNESSES, SCENARIOS
from tests.support.paths import DATA
from twinforge.core.workspace import Workspace
from twinforge.observer import detect
from twinforge.observer.diagnose import diagnose_run
from twinforge.observer.labelled import REAL_SPEC, harness_runs
from twinforge.observer.trajectory.atif import AtifTrajectory
from twinforge.observer.trajectory.from_atif import read_atif
from twinforge.observer.trajectory.run import STREAM, load_run

RUNS = DATA / "harness-runs"
LABELS: dict[str, dict[str, object]] = yaml.safe_load((RUNS / "labels.yaml").read_text())


def test_every_scenario_is_recorded_on_every_harness() -> None:
    assert set(LABELS) == {f"{h}/{s}" for h in HARNESSES for s in SCENARIOS}


@pytest.mark.parametrize("item", harness_runs(RUNS), ids=lambda item: item.name)
def test_a_recorded_run_reads_into_one_trajectory_with_its_labels(item: object) -> None:
    from twinforge.observer.labelled import Labelled

    assert isinstance(item, Labelled) and item.path is not None
    document = load_run(item.path)
    again = AtifTrajectory.model_validate_json(document.model_dump_json(exclude_none=True))
    assert again == document  # what is written reads back the same
    assert document.info("harness").startswith(item.source.removeprefix("run:"))
    assert document.info("model_calls", 0) >= sum(1 for s in document.steps if s.llm_call_count == 1) - 1
    steps = read_atif(document).steps
    found = {f.cls for f in detect(steps, REAL_SPEC) if f.confidence >= 0.7}
    assert found == item.classes, item.name
    diagnosis = diagnose_run(item.path, REAL_SPEC)
    assert (diagnosis.cause.cause if diagnosis.cause else None) == item.cause, (item.name, diagnosis.cause)


def test_a_repeated_failing_command_has_the_same_steps_on_every_harness() -> None:
    for harness in HARNESSES:
        steps = read_atif(load_run(RUNS / harness / "repeat-failing")).steps
        found = {f.key: f.steps for f in detect(steps)}
        assert found["reasoning/repeated_command"] == (1, 2, 3, 4, 5, 6), harness
        assert found["tool_failure/consecutive_failures"] == (1, 2, 3, 4, 5, 6), harness
        assert [a.returncode for s in steps[:6] for a in s.actions] == [1] * 6, harness


def test_a_cli_that_wrote_nothing_is_read_from_the_proxy_transcript(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    shutil.copytree(RUNS / "claude-code" / "repeat-failing", folder)
    (folder / STREAM).write_text("")
    document = load_run(folder)
    assert document.info("sources") == ["proxy.jsonl"]
    steps = read_atif(document).steps
    assert [a.command for s in steps for a in s.actions] == ["cat build/link.log"] * 6
    assert [a.returncode for s in steps for a in s.actions] == [1] * 6  # Claude Code's tool_result is_error


def _workspace_with_run(tmp_path: Path, name: str, run_id: str) -> Workspace:
    ws = Workspace.init(tmp_path / "ws")
    shutil.copytree(RUNS / name, ws.root / "runs" / run_id)
    return ws


def test_diagnose_takes_a_run_id_of_the_workspace(tmp_path: Path) -> None:
    ws = _workspace_with_run(tmp_path, "codex/repeat-failing", "ref-r3-twin-k1-abc123")
    done = subprocess.run(
        [sys.executable, "-m", "twinforge", "diagnose", "--json", "-w", str(ws.root), "ref-r3-twin-k1-abc123"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (diagnosis,) = json.loads(done.stdout).values()
    assert {f["kind"]: f["steps"] for f in diagnosis["findings"]}["repeated_command"] == [1, 2, 3, 4, 5, 6]
    assert diagnosis["harness"].startswith("codex@") and diagnosis["cause"]["cause"] == "loop"
    unknown = subprocess.run(
        [sys.executable, "-m", "twinforge", "diagnose", "-w", str(ws.root), "no-such-run"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert unknown.returncode == 1 and "no-such-run: not a trajectory file, a run folder or a run id" in unknown.stderr


def test_trajectory_exports_a_run_as_atif(tmp_path: Path) -> None:
    ws = _workspace_with_run(tmp_path, "opencode/distinct-failures", "run-1")
    out = tmp_path / "run-1.atif.json"
    done = subprocess.run(
        [sys.executable, "-m", "twinforge", "trajectory", "-w", str(ws.root), "run-1", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    document = AtifTrajectory.model_validate_json(out.read_text())
    assert document.schema_version == "ATIF-v1.7" and document.session_id == "opencode-distinct-failures"
    assert document.agent.name == "opencode"
    results = [r for s in document.steps for r in (s.observation.results if s.observation else [])]
    assert [(r.extra or {}).get("exit_code") for r in results] == [127, 127, 127, 127]


@pytest.mark.parametrize("cli", ["claude", "codex", "opencode", "pi"])
def test_the_harness_kit_samples_read_the_same(cli: str) -> None:
    """The harness kit's recordings (another machine, another prompt) read into the same one step."""
    from twinforge.observer.trajectory.run import CLI_READERS, json_lines

    reader = CLI_READERS["claude-code" if cli == "claude" else cli]
    steps = read_atif(reader(json_lines(DATA / "harness-kit" / cli / "output.jsonl"))).steps
    commands = [(a.command, a.returncode) for s in steps for a in s.actions]
    assert commands == [("echo hello > /tmp/harness-kit/work/proof.txt", 0)], commands
    assert steps[-1].thought == "done"
