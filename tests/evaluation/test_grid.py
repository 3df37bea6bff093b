"""The grid's plan, its rule and its preflight, without Docker (docs/calibration.md, "The grid", "Preflight").

The preflight's model calls go to the shipped scripted upstream on loopback through a real proxy;
nothing here starts a task container (the Docker tests of the grid are in test_grid_docker.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run
from tests.support.lifecycle import copy_reference, write_record
from twinforge.calibration.admission import admit
from twinforge.core.settings import EvaluatedModel
from twinforge.core.workspace import Workspace
from twinforge.evaluation.cells import excluded_by_rule
from twinforge.evaluation.exceptions import EvaluationError
from twinforge.evaluation.grid import evaluate_grid
from twinforge.harness.naming import HarnessSpec
from twinforge.harness.scripted_upstream import Script, ScriptedUpstream, scripted_upstream
from twinforge.harness.serving import serving
from twinforge.runs.records import RecordsDB, records_url

KEY = "sk-grid-upstream-key-3141"


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, ScriptedUpstream]]:
    monkeypatch.setenv("EVAL_KEY", KEY)
    with scripted_upstream(Script(side_text="OK"), key=KEY) as served:
        yield served


@pytest.fixture
def admitted(workspace: Workspace) -> Workspace:
    folder = copy_reference(workspace)
    write_record(workspace, folder, True)
    admit(workspace, folder.name, by="ann")
    return workspace


def define(ws: Workspace, name: str, url: str, model: str, shapes: list[str], key_env: str = "EVAL_KEY") -> None:
    ws.config.evaluation.models[name] = EvaluatedModel.model_validate(
        {"base_url": url, "model": model, "api_key_env": key_env, "api_shapes": shapes}
    )


def test_the_help_names_the_setting_and_the_harness_form(tmp_path: Path) -> None:
    shown = run("evaluate", "--help", cwd=tmp_path)
    assert shown.returncode == 0
    text = " ".join(shown.stdout.split())
    assert "A model defined as ." not in text and "Models defined as [evaluation.models.NAME]" in text
    assert "name[@version][:mode]" in text and "--harnesses" in text and "--no-preflight" in text


def test_the_study_skips_gpt_on_claude_code_and_claude_on_codex_and_the_rule_is_a_setting() -> None:
    rule = {"gpt": ["claude-code"], "claude": ["codex"]}
    gpt, claude = EvaluatedModel(model="gpt-5.1"), EvaluatedModel(model="anthropic/claude-sonnet-4.5")
    qwen = EvaluatedModel(model="qwen3.5-4b")
    assert (gpt.model_family(), claude.model_family(), qwen.model_family()) == ("gpt", "claude", "other")
    assert EvaluatedModel(model="o3-mini").model_family() == "gpt"
    assert EvaluatedModel(model="x", provider="anthropic").model_family() == "claude"
    assert EvaluatedModel(model="gpt-oss-20b", family="open").model_family() == "open"  # set by hand
    code, codex = HarnessSpec.parse("claude-code:default"), HarnessSpec.parse("codex")
    assert excluded_by_rule(gpt, code, rule) == "[evaluation] incompatible: family 'gpt' x claude-code"
    assert excluded_by_rule(claude, codex, rule) and not excluded_by_rule(claude, code, rule)
    assert not excluded_by_rule(qwen, code, rule) and not excluded_by_rule(gpt, code, {})  # {} runs all


def test_a_grid_of_only_excluded_cells_says_so(admitted: Workspace, upstream: tuple[str, ScriptedUpstream]) -> None:
    url, _ = upstream
    define(admitted, "gpt", url, "gpt-scripted", ["chat", "responses", "messages"])
    with pytest.raises(EvaluationError, match="every combination asked for is excluded"):
        evaluate_grid(admitted, ["gpt"], "claude-code")


def test_an_upstream_without_the_harness_shape_is_served_by_translation(
    admitted: Workspace, upstream: tuple[str, ScriptedUpstream]
) -> None:
    """A Chat Completions-only upstream drives Claude Code and Codex: the proxy translates (docs/runtime.md)."""
    from twinforge.evaluation.cells import admitted_targets
    from twinforge.evaluation.preflight import Cell, preflight

    url, state = upstream
    define(admitted, "chat-only", url, "qwen-scripted", ["chat"])
    settings = admitted.config.with_api_shapes(admitted.config.evaluation.models["chat-only"])
    cells = [Cell("chat-only", settings, HarnessSpec.parse(h)) for h in ("codex", "claude-code")]
    found = preflight(cells, admitted_targets(admitted), build_layers=False)
    shapes = sorted(c.detail for c in found.checks if c.kind == "shape")
    assert shapes == ["messages: translated from chat", "responses: translated from chat"]
    models = [c for c in found.checks if c.kind == "model"]
    assert [c.subject for c in models] == ["chat-only (responses)", "chat-only (messages)"]
    assert all("'OK'" in c.detail for c in models)
    assert [s.path for s in state.seen] == ["/v1/chat/completions", "/v1/chat/completions"]  # went up as chat


def test_a_model_that_does_not_answer_stops_the_grid(
    admitted: Workspace, upstream: tuple[str, ScriptedUpstream], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = upstream
    monkeypatch.setenv("WRONG_KEY", "sk-not-the-upstream-key")
    define(admitted, "wrong-key", url, "qwen-scripted", ["chat"], key_env="WRONG_KEY")
    with pytest.raises(EvaluationError, match=r"wrong-key \(chat\): the model did not answer a one-line Chat"):
        evaluate_grid(admitted, ["wrong-key"], "mini-swe-agent")
    assert RecordsDB(records_url(admitted)).runs(status=None) == []


def test_the_tiny_call_goes_through_the_proxy_in_each_harness_shape(
    admitted: Workspace, upstream: tuple[str, ScriptedUpstream], monkeypatch: pytest.MonkeyPatch
) -> None:
    from twinforge.evaluation.cells import admitted_targets
    from twinforge.evaluation.preflight import Cell, preflight

    url, state = upstream
    define(admitted, "all-shapes", url, "any-scripted", ["chat", "responses", "messages"])
    settings = admitted.config.with_api_shapes(admitted.config.evaluation.models["all-shapes"])
    cells = [Cell("all-shapes", settings, HarnessSpec.parse(h)) for h in ("mini-swe-agent", "codex", "claude-code")]
    found = preflight(cells, admitted_targets(admitted), build_layers=False)
    models = [c for c in found.checks if c.kind == "model"]
    assert [c.subject for c in models] == ["all-shapes (chat)", "all-shapes (responses)", "all-shapes (messages)"]
    assert all("'OK'" in c.detail for c in models)
    assert sorted(s.path for s in state.seen) == ["/v1/chat/completions", "/v1/messages", "/v1/responses"]
    assert all(s.body["model"] == "any-scripted" for s in state.seen)  # the real key stayed on the host side
    monkeypatch.setenv("TWINFORGE_HARNESS_DIR", str(admitted.root / "no-harnesses"))
    with pytest.raises(EvaluationError, match=r"codex 0.146.0 is not installed; run `twinforge harness setup codex"):
        preflight(cells, admitted_targets(admitted), build_layers=False)


def test_serving_reads_api_shapes_and_translates_as_the_proxy_does() -> None:
    chat_only = EvaluatedModel(model="m", api_shapes=["chat"])
    direct = serving(chat_only, "chat")
    assert direct is not None and not direct.translated
    found = serving(chat_only, "messages")
    assert found is not None and found.translated and found.upstream == "chat"
    messages_only = EvaluatedModel(model="m", api_shapes=["messages", "responses"])
    found = serving(messages_only, "chat")  # no Chat Completions upstream: the first shape served
    assert found is not None and found.upstream == "messages"


def test_the_grid_prints_harness_keys_and_rules_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """Brackets in a harness key or a rule are text, never terminal markup (they were eaten once)."""
    from rich.console import Console

    from twinforge.evaluation import cli
    from twinforge.evaluation.cells import EvaluationReport
    from twinforge.evaluation.grid import CellReport, GridReport
    from twinforge.evaluation.tables import Matrix, MatrixCell

    mini = "mini-swe-agent@2.4.6:bypass[toolcall]"
    report = GridReport(
        cells=[
            CellReport("gpt-a", "openai:gpt-a", mini, evaluation=EvaluationReport("openai:gpt-a", mini, 1)),
            CellReport("gpt-a", "openai:gpt-a", "claude-code@2.1.220:bypass", skipped="[evaluation] incompatible: x"),
        ],
        table=Matrix(
            models=["openai:gpt-a"], harnesses=[mini], cells=[[MatrixCell(k=1, pairs=1, eligible=1, asr=1.0, cap=1.0)]]
        ),
    )
    console = Console(width=250, record=True)  # one line per row, whatever the terminal
    monkeypatch.setattr(cli, "out_console", console)
    cli.render_grid(report)
    text = console.export_text()
    assert text.count(mini) == 2 and "skipped: [evaluation] incompatible: x" in text
    assert "1 cell(s) run, 1 skipped by rule" in text
