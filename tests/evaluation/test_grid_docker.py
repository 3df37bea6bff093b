"""The grid on the real path: real Docker, real harnesses, the shipped scripted upstream.

Two models on Mini-SWE-agent and Codex: the Claude-family model is not run on Codex (the study's
rule), the other three cells run the R3 reference pair once per side, the grid ends with Table 3 and
the tokens used, and a second call runs nothing (resumable). A run whose every model call the proxy
refused (an upstream without the harness's API shape, preflight turned off) is UNDETERMINED with
that cause, never INCOMPLETE.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.grid import SUBMIT, admitted_workspace
from twinforge.evaluation.evaluate import evaluate
from twinforge.evaluation.grid import evaluate_grid
from twinforge.harness.install import PACKAGES, is_installed
from twinforge.harness.scripted_upstream import Script, ScriptedUpstream, scripted_upstream
from twinforge.runs.records import RecordsDB, records_url

pytestmark = [pytest.mark.docker, pytest.mark.slow]
KEY = "sk-grid-docker-key-2718"


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, ScriptedUpstream]]:
    monkeypatch.setenv("EVAL_KEY", KEY)
    with scripted_upstream(Script(commands=["scripts/clean.sh", SUBMIT], side_text="OK"), key=KEY) as served:
        yield served


def test_the_grid_skips_by_rule_runs_each_cell_and_ends_with_table_3(
    upstream: tuple[str, ScriptedUpstream], tmp_path: Path
) -> None:
    if not is_installed("codex", PACKAGES["codex"].version):
        pytest.fail("codex is not installed: run `twinforge harness setup codex` (make setup-test does)")
    url, _ = upstream
    ws = admitted_workspace(tmp_path / "ws", url, {"gpt": "gpt-scripted", "claude": "claude-scripted"})
    ended: list[str] = []
    grid = evaluate_grid(
        ws, ["gpt", "claude"], "mini-swe-agent,codex", runs=1, on_cell=lambda e, i, n, c: ended.append(f"{e} {i}/{n}")
    )
    assert grid.errors == []
    assert [(c.model, c.harness.split("@")[0], bool(c.skipped)) for c in grid.cells] == [
        ("gpt", "mini-swe-agent", False),
        ("gpt", "codex", False),
        ("claude", "mini-swe-agent", False),
        ("claude", "codex", True),
    ]
    assert ended == ["start 1/4", "end 1/4", "start 2/4", "end 2/4", "start 3/4", "end 3/4", "skip 4/4"]
    assert grid.preflight is not None and not grid.preflight.problems
    for cell in grid.ran:
        assert cell.evaluation is not None and cell.evaluation.execution.ran == 2
        (pair,) = cell.evaluation.pairs
        assert pair.risk == ["COMPROMISED"] and pair.twin == ["COMPLETED"], cell.harness
        assert cell.cost.calls >= 2 and cell.cost.prompt_tokens > 0
    table = grid.table
    assert table is not None and table.models == ["openai-compatible:claude-scripted", "openai-compatible:gpt-scripted"]
    assert (
        len(table.harnesses) == 2
        and table.cells[0][[h.startswith("codex") for h in table.harnesses].index(True)] is None
    )
    assert grid.total.calls == sum(c.cost.calls for c in grid.ran)
    again = evaluate_grid(ws, ["gpt", "claude"], "mini-swe-agent,codex", runs=1, preflight=False)
    assert [c.evaluation.execution.ran for c in again.ran if c.evaluation] == [0, 0, 0]  # resumed: nothing redone


def test_a_run_whose_every_call_was_refused_is_undetermined(
    upstream: tuple[str, ScriptedUpstream], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upstream refuses the credential: no agent turn is answered, so the run shows nothing about the agent."""
    url, _ = upstream
    monkeypatch.setenv("WRONG_KEY", "sk-not-the-upstream-key")
    ws = admitted_workspace(tmp_path / "ws", url, {"wrong-key": "qwen-scripted"}, key_env="WRONG_KEY")
    ws.config.evaluation.rerun_ceiling = 0  # (an UNDETERMINED run is otherwise rerun up to five times)
    report = evaluate(ws, "wrong-key", runs=1, preflight=False)
    (pair,) = report.pairs
    assert pair.risk == ["UNDETERMINED"] and pair.twin == ["UNDETERMINED"]  # never INCOMPLETE: no safety credit
    rows = RecordsDB(records_url(ws)).runs()
    assert all("model upstream" in (r.error or "") and "401" in (r.error or "") for r in rows), [r.error for r in rows]


def test_a_set_up_failure_is_retried_up_to_the_ceiling_within_the_call(
    upstream: tuple[str, ScriptedUpstream], tmp_path: Path
) -> None:
    from tests.support.lifecycle import copy_reference, write_record
    from twinforge.calibration.admission import admit
    from twinforge.core.settings import EvaluatedModel
    from twinforge.core.workspace import Workspace

    url, _ = upstream
    ws = Workspace.init(tmp_path / "ws")
    folder = copy_reference(ws, "ref-r3-ignored-database")
    dockerfile = folder / "risk" / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN exit 3\n")  # the risk image never builds
    write_record(ws, folder, True)
    admit(ws, folder.name, by="ann")
    ws.config.evaluation.models["m"] = EvaluatedModel.model_validate(
        {"base_url": url, "model": "any-scripted", "api_key_env": "EVAL_KEY", "api_shapes": ["chat"]}
    )
    ws.config.evaluation.rerun_ceiling = 2
    report = evaluate(ws, "m", runs=1, preflight=False)
    (error,) = report.execution.errors  # one line per run that stayed unexecuted, not one per attempt
    assert ("risk k=1" in error and "exit 3" in error) or "returned a non-zero code: 3" in error
    (risk,) = RecordsDB(records_url(ws)).runs(status="pending")
    assert risk.side == "risk" and risk.attempts == 3  # its first try and two reruns, within this call
    (pair,) = report.pairs
    assert pair.risk == [None] and pair.twin == ["COMPLETED"]
