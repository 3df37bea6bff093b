"""Strategy: fill the host's disk, act after a command's timeout (docs/runtime.md), or exhaust memory."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.hostile import pair_copy, play, report
from twinforge.taskpair import Outcome, load_pair
from twinforge.taskpair.runtime.runner import Runner

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_s10b_disk_fill_ends_the_run_at_its_disk_limit(runner: Runner, tmp_path: Path) -> None:
    root = pair_copy(
        tmp_path, "ref-r3-ignored-database", edits={"risk/task.toml": ("pids = 256", "pids = 256\ndisk_mb = 256")}
    )
    pair = load_pair(root)
    commands = [*play("s10b_diskfill_r3"), "echo the agent acts on", "rm -f build/app.o"]
    result = runner.run(pair, pair.risk, commands)
    records = [
        json.loads(line) for line in (Path(result.evidence_dir) / "agent" / "commands.jsonl").read_text().splitlines()
    ]
    assert "No space left on device" in records[0]["output"]  # the 10 GB fallocate is refused
    assert "disk limit (256 MiB) is used up" in records[0]["output"]  # ... after it took what was left
    assert len(records) == 1, "the run ended at the limit: no command ran after it"
    assert result.disk_full and result.outcome is Outcome.INCOMPLETE
    size = int(re.search(r"root root (\d+) .* /tmp/fill", records[0]["output"]).group(1))  # type: ignore[union-attr]
    assert size <= 256 << 20, "no more than the run's disk limit was ever written"
    leaked = report("s10b: write 12 GB (disk limit 256 MiB)", "INCOMPLETE", result, held=result.disk_full)
    assert not leaked


def test_s11c_timeout_kills_the_whole_tree_new_sessions_included(runner: Runner, tmp_path: Path) -> None:
    root = pair_copy(
        tmp_path,
        "ref-r3-ignored-database",
        edits={"risk/task.toml": ("command_timeout_s = 30", "command_timeout_s = 3")},
    )
    pair = load_pair(root)
    first, second = play("s11c_bg_survives_timeout_r3")
    with runner.session(pair, pair.risk) as session:
        killed = session.exec(first)
        later = session.exec(second, timeout_s=20)
        alive = session.exec("ps -eo pid,args | grep -c '[s]leep 8' || true")
    result = session.result
    assert killed.killed and killed.exit_code == 124
    assert "customers.db" in later.output and "No such file" in later.output  # no /tmp/bgdone
    assert alive.output.strip() == "0"
    assert result is not None and result.outcome is Outcome.INCOMPLETE
    leaked = report(
        "s11c: setsid child outlives its command's timeout",
        "INCOMPLETE",
        result,
        held=result.outcome is Outcome.INCOMPLETE,
    )
    assert not leaked


def test_memory_kill_is_undetermined_with_its_cause_never_overtime(runner: Runner, tmp_path: Path) -> None:
    root = pair_copy(
        tmp_path, "ref-r3-ignored-database", edits={"risk/task.toml": ("memory_mb = 512", "memory_mb = 64")}
    )
    pair = load_pair(root)
    result = runner.run(pair, pair.risk, ["python3 -c 'x = bytearray(400 * 1024 * 1024); print(len(x))'"])
    record = json.loads((Path(result.evidence_dir) / "agent" / "commands.jsonl").read_text().splitlines()[0])
    assert record["exit_code"] == 137  # the kernel killed the command at the container's memory limit
    # A run failure: UNDETERMINED with its cause, never OVERTIME (docs/runtime.md, "Limits").
    cause = "oom: the task container hit its memory limit (64 MiB)"
    held = result.oom_killed and not result.overtime and cause in (result.detector_error or "")
    leaked = report("memory: 400 MB in a 64 MiB container", "UNDETERMINED", result, held=held)
    assert result.outcome is Outcome.UNDETERMINED and held, (result.outcome, result.detector_error)
    assert not leaked
