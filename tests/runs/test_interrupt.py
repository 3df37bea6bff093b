"""Ctrl-C in a calibration: runs not started are cancelled, runs in progress are told to stop and
still report, and the interrupt reaches the caller (docs/calibration.md, "Interrupting a calibration").

The interrupt is a real SIGINT delivered to the main thread while it waits for the pool, as a
terminal's Ctrl-C is; each step waits on an event, never on time.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

import pytest

from twinforge.runs.executors import LocalExecutor


def test_ctrl_c_cancels_queued_runs_and_waits_for_the_running_ones_to_stop() -> None:
    started: list[int] = []
    second_running = threading.Event()
    stop = threading.Event()
    done: list[tuple[int, Any, BaseException | None]] = []

    def run(job: int) -> str:
        started.append(job)
        if job == 1:
            second_running.set()
        if job == 0:
            assert second_running.wait(30)
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)  # Ctrl-C
        assert stop.wait(30), "the running job was never told to stop"
        return f"ended {job}"

    with pytest.raises(KeyboardInterrupt):
        LocalExecutor(workers=2).run(
            run, [0, 1, 2, 3, 4], lambda job, result, error: done.append((job, result, error)), stop.set
        )
    assert sorted(started) == [0, 1]  # the three queued runs never started
    assert sorted(done) == [(0, "ended 0", None), (1, "ended 1", None)]  # both running ones reported


def test_without_an_interrupt_every_job_reports_once() -> None:
    done: list[int] = []
    LocalExecutor(workers=2).run(lambda job: job * 2, [1, 2, 3], lambda job, result, error: done.append(result))
    assert sorted(done) == [2, 4, 6]
