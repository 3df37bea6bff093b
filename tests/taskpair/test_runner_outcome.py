"""How the runner turns the end of a run into its stored outcome, with a fake engine (no Docker).

A memory kill is a run failure, never OVERTIME (docs/calibration.md: OVERTIME is the wall-clock
turn budget only; docs/runtime.md, "Limits"): without harm or goal in the verdict the run is a
stored UNDETERMINED with its cause.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from docker.errors import DockerException

from tests.support.paths import REFERENCE
from twinforge.taskpair import Outcome, Verdict, load_pair, outcome_of
from twinforge.taskpair.format.outcomes import UndeterminedCause
from twinforge.taskpair.format.spec import Side
from twinforge.taskpair.runtime.collect import Budget, Manifest
from twinforge.taskpair.runtime.memory import cgroup_oom_kills, memory_killed
from twinforge.taskpair.runtime.runner import Judgement, Runner, _Resources
from twinforge.taskpair.runtime.session import RunResult, Session

PAIR = load_pair(REFERENCE / "ref-r3-ignored-database")


class FakeContainer:
    """The task container as the end of a run sees it: its state, the freeze, then kill and remove."""

    def __init__(self, *, oom: bool, stuck: bool = False) -> None:
        self.id = self.name = "tf-fake"
        self.attrs: dict[str, Any] = {"State": {"OOMKilled": oom, "Status": "running"}}
        self.status = "running"
        self.calls: list[str] = []
        self.stuck = stuck

    def reload(self) -> None:
        self.calls.append("reload")

    def pause(self) -> None:
        self.calls.append("pause")
        self.status = "paused"

    def unpause(self) -> None:
        self.calls.append("unpause")
        self.status = "running"

    def kill(self) -> None:
        self.calls.append("kill")
        self.status = "exited"

    def remove(self, **_: object) -> None:
        self.calls.append("remove")
        if self.stuck:  # the engine refuses the removal (both tries)
            raise DockerException("removal of container tf-fake is already in progress")


class FakeContainers:
    def list(self, **_: object) -> list[FakeContainer]:
        return []


class FakeClient:
    containers = FakeContainers()


class FakeRunner(Runner):
    """The real end of a run (_conclude, _finish, _store, teardown); the detector answers ``verdict``."""

    def __init__(self, runs_dir: Path, verdict: Verdict | None) -> None:
        self.runs_dir = runs_dir
        self.base = "fake-base"
        self.cli = FakeClient()
        self.verdict = verdict

    def judge(
        self,
        side: Side,
        evidence: Path,
        *,
        run_id: str,
        tag: str = "detector",
        image: str | None = None,
        room: object = None,
    ) -> Judgement:
        if self.verdict is not None:
            return Judgement(self.verdict, None, None)
        return Judgement(None, "detector: exited with 1", UndeterminedCause.PAIR)


def fake_collect(container: object, paths: list[str], dest: Path, budget: Budget | None = None) -> Manifest:
    dest.mkdir(parents=True, exist_ok=True)
    return Manifest()


def end_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    verdict: Verdict | None,
    *,
    oom: bool,
    overtime: bool,
    stuck: bool = False,
) -> RunResult:
    monkeypatch.setattr("twinforge.taskpair.runtime.runner.collect", fake_collect)
    runner = FakeRunner(tmp_path, verdict)
    container = FakeContainer(oom=oom, stuck=stuck)
    session = Session("run-1", PAIR.risk, container, time.monotonic() + 900)
    session.overtime = overtime
    evidence = tmp_path / "run-1"
    evidence.mkdir()
    result = runner._conclude(
        PAIR,
        PAIR.risk,
        session,
        _Resources(container=container),
        evidence,
        "img",
        {},
        time.monotonic(),
        None,
    )
    # the memory counter is read first, then the whole container is frozen before anything is read,
    # and killed whole after (docs/runtime.md, "Runner")
    calls = container.calls
    assert calls[0] == "reload" and "pause" in calls and "kill" in calls and "remove" in calls
    assert calls.index("pause") < calls.index("kill") < calls.index("remove")
    stored = RunResult.model_validate(json.loads((evidence / "result.json").read_text()))
    assert stored == result
    return result


def test_memory_kill_without_harm_or_goal_is_undetermined_with_its_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = end_run(tmp_path, monkeypatch, Verdict(harmful=False, completed=False), oom=True, overtime=False)
    assert result.outcome is Outcome.UNDETERMINED and result.oom_killed and not result.overtime
    assert result.detector_error is not None and result.detector_error.startswith("oom: ")
    assert "memory limit (512 MiB)" in result.detector_error


def test_memory_kill_is_never_overtime_even_past_the_turn_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = end_run(tmp_path, monkeypatch, Verdict(harmful=False, completed=False), oom=True, overtime=True)
    assert result.outcome is Outcome.UNDETERMINED and result.overtime and result.oom_killed
    assert result.detector_error is not None and "oom: " in result.detector_error


def test_memory_kill_with_a_failed_detector_keeps_both_causes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = end_run(tmp_path, monkeypatch, None, oom=True, overtime=False)
    assert result.outcome is Outcome.UNDETERMINED and result.oom_killed
    assert result.detector_error == "detector: exited with 1; oom: the task container hit its memory limit (512 MiB)"


@pytest.mark.parametrize(
    ("verdict", "expected"),
    [
        (Verdict(harmful=True, completed=False), Outcome.COMPROMISED),
        (Verdict(harmful=False, completed=True), Outcome.COMPLETED),
    ],
)
def test_memory_kill_keeps_a_verdict_of_harm_or_goal_from_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verdict: Verdict, expected: Outcome
) -> None:
    result = end_run(tmp_path, monkeypatch, verdict, oom=True, overtime=False)
    assert result.outcome is expected and result.oom_killed and result.detector_error is None


def test_turn_budget_alone_is_overtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = end_run(tmp_path, monkeypatch, Verdict(harmful=False, completed=False), oom=False, overtime=True)
    assert result.outcome is Outcome.OVERTIME and not result.oom_killed and result.detector_error is None


@pytest.mark.parametrize(
    ("verdict", "overtime", "expected"),
    [
        (Verdict(harmful=True, completed=False), True, Outcome.COMPROMISED),
        (Verdict(harmful=False, completed=True), False, Outcome.COMPLETED),
        (Verdict(harmful=False, completed=False), False, Outcome.UNDETERMINED),
        (Verdict(harmful=False, completed=False), True, Outcome.UNDETERMINED),
        (None, True, Outcome.UNDETERMINED),
    ],
)
def test_a_failed_run_is_judged_before_the_budget(verdict: Verdict | None, overtime: bool, expected: Outcome) -> None:
    assert outcome_of(verdict, overtime=overtime, safe_completion_possible=True, failed=True) is expected


def fake_host(tmp_path: Path, cgroup: str, counters: dict[str, str]) -> tuple[Path, Path]:
    """A host ``/proc`` with process 4242 in ``cgroup`` and a cgroup tree with ``counters`` files."""
    proc, root = tmp_path / "proc", tmp_path / "cgroup"
    (proc / "4242").mkdir(parents=True)
    (proc / "4242" / "cgroup").write_text(cgroup)
    for relative, text in counters.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return proc, root


V1 = "12:pids:/docker/abc\n4:memory:/docker/abc\n1:name=systemd:/docker/abc\n"
V1_FILE = "memory/docker/abc/memory.oom_control"
V2 = "0::/system.slice/docker-abc.scope\n"
V2_FILE = "system.slice/docker-abc.scope/memory.events"


@pytest.mark.parametrize(
    ("cgroup", "counters", "expected"),
    [
        (V1, {V1_FILE: "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"}, 2),
        (V1, {V1_FILE: "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n"}, 0),
        (V2, {V2_FILE: "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\n"}, 1),
        (V1, {V1_FILE: "oom_kill_disable 0\nunder_oom 0\n"}, None),  # a kernel before 4.13: unknown
        (V2, {}, None),  # the cgroup is gone
    ],
)
def test_kernel_counter_of_memory_kills(
    tmp_path: Path, cgroup: str, counters: dict[str, str], expected: int | None
) -> None:
    proc, root = fake_host(tmp_path, cgroup, counters)
    assert cgroup_oom_kills(4242, proc=proc, root=root) == expected
    assert cgroup_oom_kills(4243, proc=proc, root=root) is None  # no such process


def test_a_killed_child_counts_though_docker_says_not_oom_killed(tmp_path: Path) -> None:
    proc, root = fake_host(tmp_path, V1, {V1_FILE: "oom_kill 1\n"})
    running = {"State": {"OOMKilled": False, "Pid": 4242, "Status": "running"}}
    assert memory_killed(running, proc=proc, root=root)
    assert memory_killed({"State": {"OOMKilled": True, "Pid": 0}}, proc=proc, root=root)  # the init itself
    assert not memory_killed({"State": {"OOMKilled": False, "Pid": 4242}}, proc=proc, root=tmp_path / "none")
    assert not memory_killed({}, proc=proc, root=root)


@pytest.mark.parametrize(
    ("verdict", "expected"),
    [
        (Verdict(harmful=True, completed=False), Outcome.COMPROMISED),
        (Verdict(harmful=False, completed=True), Outcome.COMPLETED),
        (Verdict(harmful=False, completed=False), Outcome.INCOMPLETE),
    ],
)
def test_a_teardown_failure_after_the_verdict_keeps_the_verdict_and_records_the_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verdict: Verdict, expected: Outcome
) -> None:
    result = end_run(tmp_path, monkeypatch, verdict, oom=False, overtime=False, stuck=True)
    assert result.outcome is expected and result.verdict == verdict and result.detector_error is None
    assert result.cleanup_error is not None and result.cleanup_error.startswith("teardown: container tf-fake")
    assert result.detector_digest  # which detector judged it


def test_a_teardown_failure_without_a_verdict_stays_undetermined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = end_run(tmp_path, monkeypatch, None, oom=False, overtime=False, stuck=True)
    assert result.outcome is Outcome.UNDETERMINED and result.detector_error == "detector: exited with 1"
    assert result.cleanup_error is not None
