"""The suite's two workers: tests sharing the engine, the model server or the browser are grouped
(tests/conftest.py), so each group runs in order on one worker and the rest runs beside it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.paths import ROOT

FILES = {
    "tests/taskpair/test_runner_docker.py": "docker",
    "tests/implementer/test_implementer_docker.py": "docker",  # docker and model: docker wins
    "tests/core/test_llama_server.py": "model",
    "tests/viewer/test_viewer_browser.py": "browser",
    "tests/test_matrix_option.py": "-",
}
PROBE = ("-p", "tests.support.group_probe", "--all")
"""The plugin that prints the groups; --all: these files need a resource, which plain pytest leaves out."""


def groups() -> dict[str, set[str]]:
    """``{file: groups of its collected tests}`` as the plugin prints them, collected in one process."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider", *PROBE, *FILES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    found: dict[str, set[str]] = {}
    for line in done.stdout.splitlines():
        if line.startswith("GROUP "):
            nodeid, group = line.removeprefix("GROUP ").rsplit(" ", 1)  # ids may hold spaces
            found.setdefault(nodeid.split("::")[0], set()).add(group)
    return found


# the real files, collected in a fresh process (seconds); tests/test_opt_in_options.py checks the groups in the fast run
@pytest.mark.slow
def test_each_test_is_in_the_group_of_the_resource_it_shares() -> None:
    assert groups() == {path: {group} for path, group in FILES.items()}


def test_the_suite_runs_on_two_workers_by_group() -> None:
    import tomllib

    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "-n 2" in options and "--dist loadgroup" in options
