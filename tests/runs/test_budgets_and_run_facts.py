"""Budgets as the study ran them and the run facts the rules decide (docs/calibration.md, "Budgets", "Outcomes")."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.orm import Session

from tests.support.paths import REFERENCE
from twinforge.harness import make_harness
from twinforge.runs.budgets import Budgets
from twinforge.runs.jobs import side_for_run
from twinforge.runs.records import RecordsDB, RunRow
from twinforge.runs.results import HarnessChoice
from twinforge.runs.rules import CallStatus, is_overtime, kept_after_interrupt, run_failure
from twinforge.taskpair import load_pair
from twinforge.taskpair.format.spec import AgentBudget

AGENT = AgentBudget(model_calls=60, turn_timeout_s=900, command_timeout_s=30)


def test_only_mini_swe_agent_has_a_call_cap_and_every_harness_has_the_turn_budget() -> None:
    mini = HarnessChoice(name="mini-swe-agent").budgets(AGENT)
    assert (mini.model_calls, mini.turn_seconds()) == (60, 900)
    assert HarnessChoice(name="mini-swe-agent").budgets(AGENT, max_calls=12).model_calls == 12
    for cli in ("claude-code", "codex", "opencode", "pi"):
        budgets = HarnessChoice(name=cli).budgets(AGENT, max_calls=12)  # a quick look caps Mini-SWE-agent only
        assert budgets.model_calls is None and budgets.turn_seconds() == 900 and not budgets.capped
        assert budgets.key() == "calls=none;turn=900;cmd=30"
    assert Budgets.of(AGENT, 12).key() == "calls=12;turn=900;cmd=30"


def test_a_run_gets_a_copy_of_its_side_and_the_loaded_pair_is_left_alone() -> None:
    pair = load_pair(REFERENCE / "ref-r3-ignored-database")
    before = pair.risk.spec.model_dump()
    mini = side_for_run(pair.risk, Budgets.of(pair.risk.spec.agent, 12), make_harness("mini-swe-agent"))
    assert mini.spec.agent.model_calls == 12 and mini.root == pair.risk.root
    cli = make_harness("codex")
    for_codex = side_for_run(pair.risk, Budgets.of(pair.risk.spec.agent, call_cap=False), cli)
    assert for_codex.spec.resources.memory_mb >= 1536 and for_codex.spec.agent == pair.risk.spec.agent
    assert pair.risk.spec.model_dump() == before


def test_a_runs_copy_of_a_multi_turn_side_keeps_its_later_turns(tmp_path: Path) -> None:
    """The per-run copy (budgets, fresh canaries) carries the side's user turns (docs/runtime.md, "User turns")."""
    from twinforge.taskpair.runtime.canaries import RunCanaries

    pair = load_pair(REFERENCE / "ref-r4-mt-pasted-log")
    for side in pair.sides():
        assert side.follow_ups, side.name
        copy = side_for_run(side, Budgets.of(side.spec.agent, call_cap=False), make_harness("claude-code"))
        assert copy.follow_ups == side.follow_ups and copy.user_turns == 2
        canaries = RunCanaries.fresh(side)
        materialized = canaries.materialize(copy, tmp_path / side.name)
        assert [t.number for t in materialized.follow_ups] == [t.number for t in side.follow_ups]
        assert materialized.root != side.root


def test_overtime_is_the_wall_clock_budget_only() -> None:
    base = {"session_overtime": False, "time_exceeded": False, "exit_status": "Submitted", "refused": None}
    assert not is_overtime(**base)
    assert is_overtime(**{**base, "exit_status": "TimeExceeded"})
    assert is_overtime(**{**base, "refused": "deadline"})
    assert is_overtime(**{**base, "session_overtime": True})
    assert not is_overtime(**{**base, "refused": "cap", "exit_status": "LimitsExceeded"})  # the call cap is not


def test_a_run_the_model_never_answered_shows_nothing_about_the_agent() -> None:
    served = "the upstream 'm' does not serve the messages API; list it in api_shapes of its model block"
    refused = [CallStatus(502, None, served), CallStatus(502, None, served)]
    cause = run_failure(calls=refused, upstream_failure=None, no_task_tools=None)
    assert (
        cause.startswith("model proxy: no agent turn of the run's 2 model call(s) was answered")
        and "api_shapes" in cause
    )
    assert "made no model call" in run_failure(calls=[], upstream_failure=None, no_task_tools=None)
    answered = [CallStatus(200, role="side"), CallStatus(401, refused="cap"), CallStatus(200)]
    assert run_failure(calls=answered, upstream_failure=None, no_task_tools=None) == ""
    only_side = [CallStatus(200, role="side"), CallStatus(401, refused="interrupted")]
    assert "refused: interrupted" in run_failure(calls=only_side, upstream_failure=None, no_task_tools=None)
    assert run_failure(calls=refused, upstream_failure=None, no_task_tools=None, overtime=True) == ""  # OVERTIME
    assert run_failure(calls=None, upstream_failure=None, no_task_tools=None) == ""  # records incomplete
    failed = run_failure(calls=[CallStatus(200)], upstream_failure="HTTP 500: boom", no_task_tools=None)
    assert failed == "model upstream: HTTP 500: boom"
    assert kept_after_interrupt(harmful=True, completed=False) and not kept_after_interrupt(
        harmful=None, completed=None
    )


def test_records_of_an_earlier_release_get_todays_harness_keys(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    records = RecordsDB(url)
    with Session(records.engine) as session, session.begin():
        for harness in ("codex@0.146.0[bypass]", "mini-swe-agent[text]", "terminus-2@2.0.0"):
            session.add(RunRow(pair="p", side="risk", model="m", harness=harness, k=1, risk="R3", source="S1"))
    keys = {row.harness for row in RecordsDB(url).runs(status=None)}
    assert "codex@0.146.0:bypass" in keys and "terminus-2@2.0.0" in keys
    assert any(k.startswith("mini-swe-agent@") and k.endswith(":bypass[text]") for k in keys)
