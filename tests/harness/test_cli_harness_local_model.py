"""Each CLI against the embedded model server (llama.cpp's ``llama-server``), on the real path.

The run's outcome is recorded, not asserted: the small test model (gemma3-270m) rarely does the
task. What is asserted is that the path works end to end: the workspace's calibration role points at
the embedded server, whose API shapes the proxy takes as all three (Messages for Claude Code,
Responses for Codex, Chat for OpenCode and Pi), the CLI's calls reach the server in its own shape
and are answered, and each side stores an outcome. The CLIs' own prompts and tool lists run to
10,000-20,000 tokens, so this server has two slots (the risk and the twin run at once) with a 32k context each
(the session's ``gemma`` server has 4,096 per slot).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.lifecycle import copy_reference, mark_validated
from tests.support.net import free_port
from twinforge.calibration.calibrate import calibrate, records_url
from twinforge.calibration.records import RecordsDB
from twinforge.core.localmodel import ServerInfo, get_spec, serve, stop
from twinforge.core.workspace import Workspace
from twinforge.harness.install import PACKAGES, is_installed
from twinforge.taskpair import Outcome

pytestmark = [pytest.mark.docker, pytest.mark.model, pytest.mark.slow]
SHAPE = {"claude-code": "messages", "codex": "responses", "opencode": "chat", "pi": "chat"}
CALLS = 3  # model calls per run: enough to see the CLI work, few enough for the suite
REPLY_TOKENS = 256  # the small model rambles to its limit (a CLI asks for up to 32,000); a tool call fits


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerInfo]:
    cache = tmp_path_factory.mktemp("cli-model-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TWINFORGE_CACHE_DIR", str(cache))
        spec = get_spec("gemma3-270m")
        info = serve(spec, port=free_port(), n_ctx=32768, slots=2, wait_s=180)
    yield info
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TWINFORGE_CACHE_DIR", str(cache))
        stop(info.port)


@pytest.mark.parametrize("harness", ["pi", "opencode", "codex", "claude-code"])
def test_each_cli_runs_against_the_embedded_server(
    harness: str, embedded: ServerInfo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not is_installed(harness, PACKAGES[harness].version):
        pytest.fail(f"{harness} is not installed: run `twinforge harness setup {harness}` (make setup-test does)")
    ws = Workspace.init(tmp_path / "ws", port=embedded.port)
    assert ws.config.serves_embedded(ws.config.models.calibration)
    ws.config.calibration.harness = harness
    ws.config.models.calibration.max_tokens = REPLY_TOKENS  # the proxy bounds every reply by it
    folder = copy_reference(ws, "ref-r3-ignored-database")
    mark_validated(ws, folder)
    report = calibrate(ws, [folder], runs=1, max_calls=CALLS)
    assert report.errors == []
    records = RecordsDB(records_url(ws))
    runs = records.runs()
    assert sorted(r.side for r in runs) == ["risk", "twin"]
    for run in runs:
        assert run.outcome in {o.value for o in Outcome}, run  # stored, whatever it is
        calls = records.calls(str(run.run_id))
        answered = [c for c in calls if c.shape == SHAPE[harness] and c.status == 200]
        assert answered, f"{harness} {run.side}: no call answered by the embedded server: {calls}"
        assert len([c for c in calls if c.role == "agent"]) <= CALLS
        assert all(c.completion_tokens <= REPLY_TOKENS for c in calls)
        assert (Path(str(run.evidence_dir)) / "agent" / "egress.jsonl").is_file()
        with capsys.disabled():
            print(f"\n{harness} {run.side}: {run.outcome} after {len(calls)} call(s) ({run.error or 'no error'})")
