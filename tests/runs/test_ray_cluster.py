"""The Ray executor joins a local head with and without token authentication (docs/calibration.md).

Each test starts its own head (``ray start --head --block`` in its own process group, usage stats
off, a private HOME and temp dir) and connects a driver in a fresh process, as ``calibrate
--executor ray --address`` does. Stopping the head kills only that process group.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.net import free_port
from tests.support.paths import ROOT

pytest.importorskip("ray")
pytestmark = pytest.mark.slow
RAY = Path(sys.executable).parent / "ray"
TOKEN = "twinforge-test-token-0123456789abcdef0123456789abcdef"
DRIVER = """
import posixpath, sys
from twinforge.runs.executors import RayExecutor
pool = RayExecutor(sys.argv[1])
got = []
pool.run(posixpath.basename, ["/a/b", "/c/d"], lambda job, result, error: got.append((job, result, error)))
print(sorted(r for _, r, e in got if e is None))
pool.shutdown()
"""


@contextmanager
def head(home: Path, token: bool) -> Iterator[str]:
    port = free_port()
    temp = Path(tempfile.mkdtemp(prefix="tfray", dir="/tmp"))  # Ray's socket paths must stay short
    env = {**os.environ, "HOME": str(home), "RAY_USAGE_STATS_ENABLED": "0"}
    env["RAY_AUTH_MODE"] = "token" if token else "disabled"
    command = [str(RAY), "start", "--head", "--block", f"--port={port}", "--num-cpus=1"]
    command += ["--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={temp}"]
    proc = subprocess.Popen(
        command, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the Ray head did not start") from None
                time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:
        with_group = os.getpgid(proc.pid)
        os.killpg(with_group, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(with_group, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(temp, ignore_errors=True)


def start_driver(address: str, home: Path, **env: str) -> subprocess.Popen[str]:
    """A driver process joining the head at ``address`` (read its result with :func:`finished`)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, address],
        env={**clean, "HOME": str(home), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def finished(proc: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    """Wait for a driver (at most 300 s) and return what it printed."""
    try:
        out, err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def driver(address: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return finished(start_driver(address, home, **env))


@pytest.mark.matrix  # the cluster without token auth; the token case below runs by default
def test_driver_joins_a_head_without_token_auth(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with head(home, token=False) as address:
        done = driver(address, home)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "['b', 'd']"


def test_driver_joins_a_head_with_token_auth_when_it_has_the_token(tmp_path: Path) -> None:
    home, stranger = tmp_path / "home", tmp_path / "stranger"
    (home / ".ray").mkdir(parents=True)
    stranger.mkdir()
    (home / ".ray" / "auth_token").write_text(TOKEN)  # the file that turns token auth on
    with head(home, token=True) as address:
        # The three drivers join at once (each is its own process; the head serves them all).
        started = [
            start_driver(address, home),  # failed before with a raw traceback (RAY_AUTH_MODE unset)
            start_driver(address, stranger, RAY_AUTH_TOKEN=TOKEN),
            start_driver(address, stranger),
        ]
        with_file, with_env, without = (finished(proc) for proc in started)
    assert with_file.returncode == 0, with_file.stderr
    assert with_file.stdout.strip().splitlines()[-1] == "['b', 'd']"
    assert with_env.returncode == 0, with_env.stderr
    assert without.returncode == 1
    last = without.stderr.strip().splitlines()[-1]
    assert "cannot reach the Ray cluster" in last and "token authentication" in last


def test_an_unreachable_cluster_fails_with_one_line(tmp_path: Path) -> None:
    from tests.support.lifecycle import copy_reference, mark_validated
    from twinforge.core.workspace import Workspace

    ws = Workspace.init(tmp_path / "w")
    folder = copy_reference(ws)
    mark_validated(ws, folder)
    port = free_port()  # nothing listens there
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "twinforge",
            "calibrate",
            str(folder),
            "--executor",
            "ray",
            "--address",
            f"127.0.0.1:{port}",
            "--json",
            "--runs",
            "1",
        ],
        cwd=ws.root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    expected = f"error: cannot reach the Ray cluster at 127.0.0.1:{port}: Connection refused"
    assert done.stderr.strip().splitlines() == [expected]
