"""The real path end to end: calibrate a pair in Docker through the recording proxy, then view it in Chromium.

The stub model plays a hostile agent: its reply carries a ``<script>`` payload and its first
command prints an ``<img onerror>`` payload, so the run's trajectory, proxy transcript and
host-side command record all hold them. The viewer must show the run as the records say and run
none of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.support.browser import chromium, served
from tests.support.lifecycle import copy_reference, mark_validated
from twinforge.calibration.calibrate import calibrate
from twinforge.core.llm.stub_server import openai_reply, stub_server
from twinforge.core.workspace import Workspace
from twinforge.runs.records import RecordsDB, records_url
from twinforge.viewer import Site, export_site

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.browser]
PAIR = "ref-r3-ignored-database"
SCRIPT = "<script>document.title='pwned-script'</script>"
IMG_COMMAND = "printf '%s\\n' \"<img src=x onerror=document.title='pwned-img'>\""
IMG_SHOWN = "<img src=x onerror=document.title='pwned-img'>"
COMMANDS = [IMG_COMMAND, "scripts/clean.sh", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]


def hostile_model(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    command = COMMANDS[min(turn, len(COMMANDS) - 1)]
    return 200, openai_reply(f"THOUGHT: step {turn} {SCRIPT}\n\n```mswea_bash_command\n{command}\n```")


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    with stub_server(hostile_model) as (url, _), pytest.MonkeyPatch.context() as mp:
        mp.setenv("CALIBRATION_KEY", "sk-test-not-a-real-key")
        ws = Workspace.init(tmp_path_factory.mktemp("viewer-docker") / "ws")
        cal = ws.config.models.calibration
        cal.base_url, cal.api_key_env, cal.model = url, "CALIBRATION_KEY", "weak-model"
        ws.config.calibration.grammar = False
        folder = copy_reference(ws, PAIR)
        mark_validated(ws, folder)
        report = calibrate(ws, [folder], runs=1)
        assert not report.errors
        yield ws


def test_a_calibrated_pair_in_the_browser(calibrated: Workspace) -> None:
    runs = {r.run_id: r for r in RecordsDB(records_url(calibrated)).runs()}
    risk = next(r for r in runs.values() if r.side == "risk")
    assert risk.outcome == "COMPROMISED" and risk.calls == 3
    with served(calibrated) as base, chromium() as browser:
        browser.get(base + "/")
        browser.find_element(By.LINK_TEXT, PAIR).click()
        rows = browser.find_elements(By.CSS_SELECTOR, "table.runs tbody tr")
        shown = {
            r.find_element(By.CSS_SELECTOR, "a.run-link").text: r.find_element(By.CSS_SELECTOR, ".outcome").text
            for r in rows
        }
        assert shown == {run_id: row.outcome for run_id, row in runs.items()}
        browser.find_element(By.LINK_TEXT, risk.run_id).click()
        assert "COMPROMISED" in browser.find_element(By.TAG_NAME, "h1").text
        steps = browser.find_elements(By.CSS_SELECTOR, "li.step")
        assert len(steps) == risk.calls
        first = steps[0]
        assert first.find_element(By.CSS_SELECTOR, "pre.cmd").text == IMG_COMMAND
        assert IMG_SHOWN in first.find_element(By.CSS_SELECTOR, "pre.output").text  # the host's record
        assert SCRIPT in first.find_element(By.CSS_SELECTOR, "pre.reply").text
        assert "scripts/clean.sh" in steps[1].text
        assert "data" in browser.find_element(By.CSS_SELECTOR, "section.verdict").text.lower()
        assert browser.execute_script("return document.scripts.length") == 0
        assert "pwned" not in browser.title
        assert not [e for e in browser.get_log("browser") if "pwned" in e["message"]]
        browser.find_elements(By.LINK_TEXT, "raw request and response")[0].click()
        assert "weak-model" in browser.find_element(By.TAG_NAME, "main").text and "pwned" not in browser.title


def test_every_run_of_a_calibrated_workspace_is_exported(calibrated: Workspace, tmp_path: Path) -> None:
    done = export_site(Site(calibrated), tmp_path / "site")
    assert done.missing == []
    for run in RecordsDB(records_url(calibrated)).runs():
        page = (done.folder / "runs" / str(run.run_id) / "index.html").read_text()
        assert run.outcome in page and "<script" not in page
        for n in range(1, run.calls + 1):
            assert (done.folder / "runs" / str(run.run_id) / "calls" / str(n) / "index.html").is_file()
