from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.net import free_port
from twinforge.core.localmodel import ServerInfo, get_spec, healthy, serve, stop
from twinforge.core.workspace import Workspace


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--matrix",
        action="store_true",
        help="also run the per-harness matrix (tests marked 'matrix'; docs/results.md gives its figures)",
    )


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
    """Group the tests by the resource they share; leave out the per-harness matrix unless --matrix.

    The suite runs on two pytest-xdist workers (``-n 2 --dist loadgroup`` in pyproject.toml; ``-n 0``
    runs it in one process): each group of :func:`resource_group` runs in order on one worker, every
    other test is its own unit, so the tests that need no engine run beside the Docker tests. The suite
    stays within 30 minutes on 2 cores (the brief's limit; docs/results.md gives the measured time).
    """
    for item in items:
        group = resource_group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
    if config.getoption("--matrix"):
        return
    kept, left = [], []
    for item in items:
        (left if item.get_closest_marker("matrix") else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


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
