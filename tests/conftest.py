from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.net import free_port
from twinforge.core.localmodel import ServerInfo, get_spec, healthy, serve, stop
from twinforge.core.workspace import Workspace

OPT_IN = {
    "docker": "needs the Docker engine and the base image (make setup-docker)",
    "model": "needs the real llama.cpp server on gemma3-270m (make setup-test)",
    "browser": "needs Debian's Chromium and chromedriver (make setup-browser)",
    "slow": "takes more than a few seconds on the real path and needs none of the three",
}
"""The markers whose tests run only when asked, each by its own option (``--docker`` ...), all by ``--all``."""


def pytest_addoption(parser: pytest.Parser) -> None:
    for name, what in OPT_IN.items():
        parser.addoption(f"--{name}", action="store_true", help=f"also run the tests marked '{name}' ({what})")
    parser.addoption(
        "--all",
        action="store_true",
        help="also run every opt-in test: --docker --model --browser --slow (what make test and CI run)",
    )
    parser.addoption(
        "--matrix",
        action="store_true",
        help="also run the per-harness matrix (tests marked 'matrix'; docs/results.md gives its figures)",
    )


def asked(config: pytest.Config) -> set[str]:
    """The opt-in markers whose tests this run takes: those named by their option, the first four with ``--all``."""
    taken = {name for name in (*OPT_IN, "matrix") if config.getoption(f"--{name}")}
    return taken | set(OPT_IN) if config.getoption("--all") else taken


def waits_for(item: pytest.Item, taken: set[str]) -> list[str]:
    """The options ``item`` waits for (``["--docker"]``); empty when this run takes it.

    A test that needs Docker, the model server or a browser runs when every one it needs is asked
    for (``--docker``, ``--model``, ``--browser``), whether it is also marked ``slow`` or not: nearly
    all of them are, and ``--docker`` alone must run the Docker tests. A ``slow`` test that needs none
    of the three runs with ``--slow``; ``--all`` takes all four. A case of the per-harness matrix
    also waits for ``--matrix`` (not part of ``--all``).
    """
    needs = [name for name in ("docker", "model", "browser") if item.get_closest_marker(name)]
    if not needs and item.get_closest_marker("slow"):
        needs = ["slow"]
    if item.get_closest_marker("matrix"):
        needs.append("matrix")
    return [f"--{name}" for name in needs if name not in taken]


def pytest_report_header(config: pytest.Config) -> str:
    """One line naming the opt-in tests this run leaves out and the option that runs each."""
    taken = asked(config)
    left = [f"{name} (--{name})" for name in (*OPT_IN, "matrix") if name not in taken]
    return "deselected unless asked: " + (", ".join(left) + "; --all runs all but the matrix" if left else "nothing")


def resource_group(item: pytest.Item) -> str | None:
    """The xdist group of a test that needs a shared resource: ``docker``, ``model``, ``browser`` or None.

    A test that needs the Docker engine is in ``docker`` whatever else it needs: those tests share the
    engine's images, containers and labels (some count them), so they run in order on one worker, as
    in a serial run. A test that needs only the model server (one per worker, on a free port) is in
    ``model``; one that needs only the browser is in ``browser``.
    """
    for name in ("docker", "model", "browser"):
        if item.get_closest_marker(name):
            return name
    return None


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the opt-in tests not asked for and the per-harness matrix unless --matrix; group the rest.

    Plain ``pytest`` is the fast run: the tests that need Docker, the model server or a browser, and
    the slow ones, are deselected (not skipped: a skip would add one summary line per test function
    under ``-ra``, about 300 of them; the report header names what is left out and the option that
    runs it). ``--docker``, ``--model``, ``--browser``, ``--slow`` take them back, ``--all`` all four
    (``make test``, hence CI).

    The suite runs on two pytest-xdist workers (``-n 2 --dist loadgroup`` in pyproject.toml; ``-n 0``
    runs it in one process): each group of :func:`resource_group` runs in order on one worker, every
    other test is its own unit, so the tests that need no engine run beside the Docker tests
    (docs/results.md gives the measured times).
    """
    taken = asked(config)
    kept, left = [], []
    for item in items:
        (left if waits_for(item, taken) else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept
    for item in items:
        group = resource_group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace.init(tmp_path / "ws")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Unit tests never touch the user's cache; the real-model tests set their own.
    monkeypatch.setenv("TWINFORGE_CACHE_DIR", str(tmp_path / "twinforge-cache"))
    monkeypatch.delenv("TWINFORGE_API_KEY", raising=False)


@pytest.fixture(scope="session")
def gemma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerInfo]:
    """The real llama.cpp server with gemma3-270m (the fast smoke-test model), shared by the session."""
    cache = tmp_path_factory.mktemp("model-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TWINFORGE_CACHE_DIR", str(cache))
        info = serve(get_spec("gemma3-270m"), port=free_port(), n_ctx=4096, wait_s=180)
    yield info
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TWINFORGE_CACHE_DIR", str(cache))
        stop(info.port)
    assert not healthy(info.base_url, timeout_s=1.0)


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """Ctrl-C (SIGINT) raises ``KeyboardInterrupt`` in the main thread during the test, as in a terminal.

    A suite started in the background (``make test &``, ``nohup``) inherits SIGINT ignored, and Python
    then installs no handler of its own: a test that presses Ctrl-C would see nothing happen.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
