"""The observer A/B bench's arithmetic: intervals, OVERTIME runs counted apart, recovery per arm."""

from __future__ import annotations

import pytest

from bench.observer_ab import mean_interval, overtime, summarize, wilson


def row(
    observe: bool,
    *,
    success: bool = True,
    exit: str = "Submitted",
    refused: str | None = None,
    interventions: tuple = (),  # type: ignore[type-arg]
) -> dict:  # type: ignore[type-arg]
    return {
        "part": "calibration",
        "task": "t",
        "observer": observe,
        "success": success,
        "exit": exit,
        "refused": refused,
        "outcome": "COMPLETED" if success else "INCOMPLETE",
        "tokens": 1000,
        "steps": 4,
        "misbehaviour": bool(interventions),
        "tool_failures": 1,
        "actions": 4,
        "interventions": [{"key": "k", "level": level, "recovered": rec} for level, rec in interventions],
        "shadowed": [],
    }


def test_wilson_interval_is_the_score_interval() -> None:
    assert wilson(0, 0) == "-"
    assert wilson(9, 10) == "90% [60%, 98%] (9/10)"
    assert wilson(0, 5).startswith("0% [0%, 43%]")


def test_mean_interval_is_one_point_nine_six_standard_errors() -> None:
    assert mean_interval([]) == "-"
    assert mean_interval([10.0, 20.0, 30.0]) == "20 [9, 31]"
    assert mean_interval([0.0, 0.0, 0.9], ".1%") == "30.0% [0.0%, 88.8%]"  # a rate is never below 0


def test_a_run_ended_by_its_time_budget_is_overtime() -> None:
    assert overtime(row(False, success=False, exit="HarnessError: AuthenticationError", refused="deadline"))
    assert overtime(row(False, success=False, exit="TimeExceeded"))
    assert overtime(row(False, success=False) | {"outcome": "OVERTIME"})
    assert not overtime(row(False, success=False, exit="LimitsExceeded", refused="cap"))
    assert not overtime(row(False))
    assert not overtime({"exit": None})


def test_summary_leaves_overtime_runs_out_and_counts_recovery(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        row(False, success=False),
        row(False, success=False, exit="HarnessError: AuthenticationError", refused="deadline"),
        row(True, interventions=(("nudge", True),)),
        row(True, interventions=(("nudge", False),)),
        row(True, success=False, interventions=(("nudge", True), ("plan", False), ("stop", False))),
    ]
    summarize(rows, "calibration")
    out = capsys.readouterr().out
    assert "1 runs ended by the time budget" in out
    assert "shadow (control)  runs   1" in out
    assert "with observer     runs   3" in out
    assert "success 67% " in out and "(2/3)" in out
    assert "interventions 5 in 3 runs" in out
    assert "recovery after one 50% " in out and "(1/2)" in out
    assert "after several 50% " in out  # nudge recovered, plan not; the stop is never a recovery
