"""The two embedded model servers the benches run side by side in the same run.

- ``old``: llama-cpp-python's Python server, as ``twinforge model serve`` started it before (one
  request at a time, every usable core). It needs the Python bindings, which twinforge itself no
  longer installs: ``CFLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" CXXFLAGS="$CFLAGS"
  .venv/bin/pip install --no-cache-dir '.[bench-baseline]'``.
- ``new``: llama.cpp's own ``llama-server``, as ``twinforge model serve`` starts it now (slots decoded
  together, prompt cache; docs/design.md, "The embedded model server").

Both serve the same GGUF file on loopback. ``peak_rss_mb`` is the server process's own peak resident
memory (``VmHWM`` of ``/proc/<pid>/status``), read before the server stops.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from twinforge.core.localmodel import LocalModelSpec, assemble, serve, stop  # noqa: E402
from twinforge.core.processes import usable_cores  # noqa: E402


@dataclass
class Running:
    """A started server: what the bench sends requests to."""

    label: str
    base_url: str
    pid: int
    slots: int

    def peak_rss_mb(self) -> float:
        """The server process's peak resident memory in MB (0 when /proc does not say)."""
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0


def old_available() -> bool:
    """Whether llama-cpp-python's server (the baseline) is installed."""
    return importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("uvicorn") is not None


@contextmanager
def old_server(spec: LocalModelSpec, port: int, n_ctx: int = 8192) -> Iterator[Running]:
    """llama-cpp-python's server with ``spec`` on ``port``, as twinforge started it before (8,192 tokens)."""
    path = assemble(spec)
    log = Path(f"/tmp/bench-old-server-{port}.log")
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(path),
        "--model_alias",
        "local",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--verbose",
        "False",
        "--n_threads",
        str(usable_cores()),
    ]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 300
        while not _answers(url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the baseline server did not start; log {log}:\n{log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield Running("old: llama-cpp-python server", url, process.pid, 1)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(60)


@contextmanager
def new_server(spec: LocalModelSpec, port: int, n_ctx: int = 16384, slots: int | None = None) -> Iterator[Running]:
    """llama.cpp's ``llama-server`` with ``spec`` on ``port``, as ``twinforge model serve`` starts it."""
    info = serve(spec, port=port, n_ctx=n_ctx, slots=slots)
    try:
        yield Running(f"new: llama-server, {info.slots} slots", info.base_url, info.pid, info.slots)
    finally:
        stop(port)


def start(name: str, spec: LocalModelSpec, port: int) -> AbstractContextManager[Running]:
    """The ``old`` or ``new`` server as a context manager yielding :class:`Running`."""
    return old_server(spec, port) if name == "old" else new_server(spec, port)


def available(which: list[str]) -> list[str]:
    """``which`` without ``old`` when llama-cpp-python is not installed (said on stdout)."""
    if "old" in which and not old_available():
        print("  (old server skipped: llama-cpp-python is not installed; see bench/model_servers.py)")
        return [name for name in which if name != "old"]
    return which


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/models", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
