"""Debian's Chromium driven by Selenium with Debian's chromedriver, and the viewer served by uvicorn.

Nothing here downloads a browser or a driver: both paths are given, so Selenium Manager never runs.
Chromium starts headless with the background-networking features off and a fresh profile, so it
sends nothing off this machine.
"""

from __future__ import annotations

import socket
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from twinforge.core.workspace import Workspace
from twinforge.viewer import Site, build_app

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--window-size=1400,1000",
)


@contextmanager
def chromium() -> Iterator[webdriver.Chrome]:
    """A headless Chromium session with a new profile; the browser console log is kept (``get_log``)."""
    with tempfile.TemporaryDirectory(prefix="tf-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in (*FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
        try:
            yield driver
        finally:
            driver.quit()


@contextmanager
def served(workspace: Workspace) -> Iterator[str]:
    """The viewer of ``workspace`` on a loopback port; yields its base URL.

    The socket listens before the server thread starts, so a request made at once waits in the
    backlog instead of racing the start-up.
    """
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    config = uvicorn.Config(build_app(Site(workspace)), log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
