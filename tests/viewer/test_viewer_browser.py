"""The viewer in a real browser: Debian's Chromium through Selenium, the server through uvicorn.

Checks what a maintainer sees against the records, and that hostile run content (a model reply
with a ``<script>`` payload, command output with an ``<img onerror>`` payload) is shown as text and
never runs; then the static export, opened from disk.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.support.browser import chromium, served
from tests.support.viewer import PAIR, viewer_workspace
from twinforge.core.workspace import Workspace
from twinforge.runs.records import RecordsDB, records_url
from twinforge.viewer import Site, export_site

pytestmark = [pytest.mark.browser]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, dict[str, str]]:
    return viewer_workspace(tmp_path_factory.mktemp("viewer-browser") / "ws")


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with chromium() as driver:
        yield driver


def _payloads_ran(driver: WebDriver) -> list[str]:
    found = [e["message"] for e in driver.get_log("browser") if "pwned" in e["message"]]
    title = driver.title
    return [*found, title] if "pwned" in title else found


def test_overview_to_pair_to_run_matches_the_records(browser: WebDriver, workspace) -> None:
    ws, ids = workspace
    records = {r.run_id: r for r in RecordsDB(records_url(ws)).runs()}
    with served(ws) as base:
        browser.get(base + "/")
        assert browser.title.startswith("Overview")
        assert "Calibration: openai-compatible:local" in browser.find_element(By.TAG_NAME, "main").text
        browser.find_element(By.LINK_TEXT, PAIR).click()
        assert browser.current_url == f"{base}/pairs/{PAIR}"
        rows = browser.find_elements(By.CSS_SELECTOR, "table.runs tbody tr")
        assert len(rows) == len(records)
        shown = {
            r.find_element(By.CSS_SELECTOR, "a.run-link").text: r.find_element(By.CSS_SELECTOR, ".outcome").text
            for r in rows
        }
        assert shown == {run_id: row.outcome for run_id, row in records.items()}
        browser.find_element(By.LINK_TEXT, ids["risk"]).click()
        assert browser.current_url == f"{base}/runs/{ids['risk']}"
        header = browser.find_element(By.TAG_NAME, "h1").text
        assert ids["risk"] in header and "COMPROMISED" in header
        steps = browser.find_elements(By.CSS_SELECTOR, "li.step")
        assert len(steps) == records[ids["risk"]].calls == 2
        assert "scripts/clean.sh" in steps[1].find_element(By.CSS_SELECTOR, "pre.cmd").text
        assert "exit 0" in steps[1].text
        verdict = browser.find_element(By.CSS_SELECTOR, "section.verdict").text
        assert "the detector found a prohibited effect" in verdict


def test_hostile_reply_and_output_are_text_and_never_run(browser: WebDriver, workspace) -> None:
    ws, ids = workspace
    with served(ws) as base:
        for url in [f"/runs/{ids['risk']}", f"/runs/{ids['risk']}/calls/2", f"/runs/{ids['eval']}", "/"]:
            browser.get(base + url)
            assert not _payloads_ran(browser), url
            assert browser.execute_script("return document.scripts.length") == 0
            assert browser.find_elements(By.CSS_SELECTOR, "main img[src='x']") == []
        browser.get(base + f"/runs/{ids['risk']}")
        for summary in browser.find_elements(By.CSS_SELECTOR, "details.more > summary"):
            summary.click()  # unfolding long output renders it, still as text
        text = browser.find_element(By.TAG_NAME, "main").text
        assert "<script>document.title='pwned-script'</script>" in text
        assert "<img src=x onerror=\"document.title='pwned-img'\">" in text
        assert not _payloads_ran(browser)


def test_static_export_opens_from_disk(browser: WebDriver, workspace, tmp_path: Path) -> None:
    ws, ids = workspace
    done = export_site(Site(ws), tmp_path / "site")
    assert done.pages >= 8 and not done.missing
    browser.get((done.folder / "index.html").as_uri())
    assert browser.title.startswith("Overview")
    header = browser.find_element(By.TAG_NAME, "header")
    assert header.value_of_css_property("background-color") == "rgba(29, 35, 41, 1)"  # the stylesheet loaded
    browser.find_element(By.LINK_TEXT, "Pairs").click()
    browser.find_element(By.LINK_TEXT, PAIR).click()
    browser.find_element(By.LINK_TEXT, ids["risk"]).click()
    assert browser.current_url.endswith(f"/runs/{ids['risk']}/index.html")
    assert "COMPROMISED" in browser.find_element(By.TAG_NAME, "h1").text
    browser.find_element(By.LINK_TEXT, "raw request and response")
    assert browser.execute_script("return document.scripts.length") == 0 and not _payloads_ran(browser)
