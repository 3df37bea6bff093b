"""A command's spend ceiling stops new runs, and each run's model use reaches the records and the report.

docs/runtime.md, "Spend ceiling" and "Model channel". The runs layer is real (planning in a real
SQLite records database, the local executor, the process's model proxy counting on the command's
meter, the scripted upstream answering); only the run itself is a stand-in for the harness in a
task container: one priced model call through the proxy, then the record ``_store`` writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.lifecycle import copy_reference
from twinforge.core.settings import ModelPrice, ModelSettings
from twinforge.core.spend import SpendMeter
from twinforge.core.workspace import Workspace
from twinforge.evaluation.report import compute_report
from twinforge.evaluation.texttables import text_tables
from twinforge.harness.proxy import ModelProxy
from twinforge.harness.scripted_upstream import Script, scripted_upstream
from twinforge.runs import execute as execute_module
from twinforge.runs import jobs
from twinforge.runs.execute import Campaign, Target, execute
from twinforge.runs.records import RecordsDB
from twinforge.runs.results import FinishedRun, HarnessChoice, RunDetail, RunSummary
from twinforge.taskpair import Outcome, load_pair
from twinforge.taskpair.format.digest import detector_digest, pair_digest
from twinforge.viewer.runs import run_item

KEY = "sk-upstream-test"
PRICE = ModelPrice(input=2.0, output=8.0)  # USD per million tokens
PER_CALL = (11 * 2.0 + 7 * 8.0) / 1e6  # the scripted upstream's usage: 11 prompt, 7 completion tokens


def priced_run(job: jobs.Job) -> RunSummary:
    """One run as the runs layer sees it: claim, grant, one model call through the process's proxy, store."""
    records, proxy, _ = jobs._Context.get(job.records_url, job.runs_dir)
    run_id = f"run-{job.row_id}"
    assert records.claim(job.row_id, run_id)
    token = proxy.grant(run_id, job.model, cap=5, seconds=60)
    body = {"model": job.model.model, "messages": [{"role": "user", "content": "list the files"}]}
    reply = httpx.post(proxy.url + "/chat/completions", json=body, headers={"authorization": f"Bearer {token}"})
    assert reply.status_code == 200, reply.text
    grant = proxy.release(token)
    pair = load_pair(Path(job.pair_path))
    side = pair.risk if job.side == "risk" else pair.twin
    use = grant.summary()
    detail = RunDetail(budgets=job.budgets, harness=job.harness.spec, model_use=use)
    records.finish(
        job.row_id,
        FinishedRun(
            run_id=run_id,
            outcome=Outcome.STOPPED if job.side == "risk" else Outcome.COMPLETED,
            harmful=False,
            completed=job.side == "twin",
            exit_status="Submitted",
            calls=grant.calls,
            prompt_tokens=grant.usage.prompt_tokens,
            completion_tokens=grant.usage.completion_tokens,
            seconds=1.0,
            evidence_dir=str(Path(job.runs_dir) / run_id),
            trajectory="",
            detector_digest=detector_digest(side.root),
            detail=detail,
        ),
    )
    return RunSummary(run_id=run_id, pair=pair.id, side=job.side, k=job.k, calls=grant.calls, cost_usd=use.cost_usd)


@pytest.fixture
def runs(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Campaign, list[Target], RecordsDB]]:
    """A campaign of one pair, K = 2 (four runs), on a priced model behind the scripted upstream."""
    monkeypatch.setenv("TF_TEST_UPSTREAM_KEY", KEY)
    monkeypatch.setattr(execute_module, "run_job", priced_run)
    records = RecordsDB(f"sqlite:///{workspace.root / 'records.db'}")
    proxy = ModelProxy(records).start()
    monkeypatch.setitem(jobs._Context.records, records.url, records)
    monkeypatch.setitem(jobs._Context.proxies, records.url, proxy)
    monkeypatch.setitem(jobs._Context.runners, str(workspace.root / "runs"), None)  # type: ignore[arg-type]
    pair = load_pair(copy_reference(workspace))
    with scripted_upstream(Script(commands=["ls"]), key=KEY) as (url, _):
        model = ModelSettings(
            base_url=url, model="priced-model", api_key_env="TF_TEST_UPSTREAM_KEY", api_shapes=["chat"], price=PRICE
        )  # type: ignore[arg-type]
        campaign = Campaign("evaluation", model, "openai:priced-model", HarnessChoice(name="mini-swe-agent"), 2)
        try:
            yield campaign, [Target.of(pair, pair_digest(pair.root))], records
        finally:
            proxy.stop()


def test_the_spend_ceiling_stops_new_runs_and_the_next_call_runs_them(
    runs: tuple[Campaign, list[Target], RecordsDB], workspace: Workspace
) -> None:
    campaign, targets, records = runs
    meter = SpendMeter(ceiling_usd=PER_CALL / 2)  # the first run's one call crosses it
    done: list[Any] = []
    first = execute(
        campaign,
        targets,
        records,
        workspace.root / "runs",
        workers=1,
        spend=meter,
        on_done=lambda result, error: done.append((result, error)),
    )
    assert first.ran == 1 and first.not_started == 3 and first.errors == []
    assert [error for _, error in done] == [None] and done[0][0].cost_usd == pytest.approx(PER_CALL)
    assert meter.spent_usd == pytest.approx(PER_CALL)
    message = str(meter.stop_message)
    assert message.startswith("spend ceiling of $0.00 reached ($0.00 spent over 1 priced call(s))")
    assert "3 run(s) not started" in message
    assert len(records.runs(status="done")) == 1 and len(records.runs(status="pending")) == 3
    assert jobs._Context.proxies[records.url].spend is None  # the meter is the command's alone

    again = execute(campaign, targets, records, workspace.root / "runs", workers=1, spend=SpendMeter())
    assert (again.ran, again.not_started, again.skipped) == (3, 0, 1)

    stored = records.runs(status="done")
    use = stored[0].finished().detail.model_use  # type: ignore[union-attr]
    assert use is not None and use.model == "priced-model" and use.settings.price == PRICE
    assert [(s.harness, s.upstream) for s in use.shapes] == [("chat", "chat")]
    assert (use.usage.prompt_tokens, use.usage.completion_tokens) == (11, 7)
    assert run_item(stored[0]).cost_usd == pytest.approx(PER_CALL)  # the viewer's run list

    report = compute_report(stored)
    (cell,) = report.combinations
    assert cell.cost.cost_usd == pytest.approx(4 * PER_CALL) and cell.cost.prompt_tokens == 44
    assert [s.temperature for s in cell.settings] == [campaign.model.temperature] and len(cell.settings) == 1
    assert cell.pair_costs[targets[0].pair.id].cost_usd == pytest.approx(4 * PER_CALL)
    dumped = report.model_dump(mode="json")["combinations"][0]  # what ``report --json`` prints per cell
    assert dumped["cost"]["cost_usd"] == pytest.approx(4 * PER_CALL) and dumped["settings"][0]["max_tokens"] > 0
    tables = {t.name: t for t in text_tables(report)}
    assert tables["combinations"].header[-1] == "cost (USD)" and tables["cost"].header[-1] == "cost (USD)"


def test_without_a_price_there_is_no_cost_column_and_no_ceiling_stop(
    runs: tuple[Campaign, list[Target], RecordsDB], workspace: Workspace
) -> None:
    campaign, targets, records = runs
    campaign.model = campaign.model.model_copy(update={"price": None})
    meter = SpendMeter(ceiling_usd=1e-9)
    done = execute(campaign, targets, records, workspace.root / "runs", workers=1, spend=meter)
    assert (done.ran, done.not_started, meter.stop_message) == (4, 0, None)
    report = compute_report(records.runs(status="done"))
    (cell,) = report.combinations
    assert cell.cost.cost_usd is None and cell.cost.prompt_tokens == 44
    tables = {t.name: t for t in text_tables(report)}
    assert "cost (USD)" not in tables["combinations"].header and "cost (USD)" not in tables["cost"].header
