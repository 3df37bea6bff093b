"""Start, find and stop the embedded model server: llama.cpp's own ``llama-server``.

The server (built once by :mod:`twinforge.core.localmodel.build`) binds to loopback only, decodes
``slots`` sequences together (continuous batching), reuses prompt prefixes, and serves
``/v1/chat/completions``, ``/v1/messages`` (+ ``count_tokens``) and ``/v1/responses``
(docs/design.md, "The embedded model server"). Its state (pid, port, model, slots, log) is a small
JSON file in the cache, so ``twinforge model status`` can say what runs where from any shell, and
concurrent twinforge processes share one server per model and port.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlparse

import httpx
from pydantic import BaseModel

from twinforge.core.atomic import atomic_write_text
from twinforge.core.exceptions import LocalModelError
from twinforge.core.localmodel.assemble import Progress, assemble
from twinforge.core.localmodel.build import require_server
from twinforge.core.localmodel.catalog import LocalModelSpec
from twinforge.core.paths import cache_dir
from twinforge.core.processes import machine_slots, process_alive, usable_cores

LOOPBACK = ("127.0.0.1", "localhost", "::1")
PROMPT_CACHE_MIB = 2048
"""Host memory the server may keep finished prompts in, to reuse their prefixes in any slot (llama.cpp's
``--cache-ram``, default 8192 MiB; lowered because the machines here are shared)."""


class ServerInfo(BaseModel):
    """A started server as recorded in ``<cache>/server/<port>.json``.

    Attributes:
        pid: Process id of the server.
        model: Catalog name of the model it serves.
        model_path: The GGUF file.
        host: Bind address.
        port: TCP port.
        n_ctx: Context window of each slot in tokens.
        started_at: When it was started (UTC).
        log: Its combined stdout/stderr log file.
        slots: Sequences it decodes at once (llama.cpp's ``--parallel``).
        threads: CPU threads it generates with.
    """

    pid: int
    model: str
    model_path: str
    host: str
    port: int
    n_ctx: int
    started_at: datetime
    log: str
    slots: int = 1
    threads: int = 1

    @property
    def root_url(self) -> str:
        """The server's own root, e.g. ``http://127.0.0.1:8080`` (``/health``, ``/slots``)."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """OpenAI-compatible base URL, e.g. ``http://127.0.0.1:8080/v1``."""
        return f"http://{self.host}:{self.port}/v1"


def _state_dir() -> Path:
    return cache_dir() / "server"


def healthy(base_url: str, timeout_s: float = 2.0) -> bool:
    """True when an OpenAI-compatible server answers ``GET <base_url>/models`` with 200."""
    try:
        return httpx.get(f"{base_url}/models", timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


def ready(info: ServerInfo, timeout_s: float = 2.0) -> bool:
    """True when the server's own readiness endpoint, ``GET /health``, answers 200 (model loaded).

    llama.cpp's server answers 503 while it loads the model; it answers ``/health`` while its
    slots generate, so a busy server is still ready.
    """
    try:
        return httpx.get(f"{info.root_url}/health", timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


def busy_slots(info: ServerInfo, timeout_s: float = 2.0) -> int | None:
    """How many of the server's slots are generating now (``GET /slots``), or ``None`` if it does not say."""
    try:
        reply = httpx.get(f"{info.root_url}/slots", timeout=timeout_s)
        slots = reply.json() if reply.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    if not isinstance(slots, list):
        return None
    return sum(1 for slot in slots if isinstance(slot, dict) and slot.get("is_processing"))


def server_environment() -> dict[str, str]:
    """This process's environment without ``LLAMA_ARG_*`` variables, which llama.cpp's server reads as options.

    The server's options are the command line twinforge gives it, nothing inherited from a shell.
    """
    return {key: value for key, value in os.environ.items() if not key.startswith("LLAMA_ARG_")}


def server_command(info: ServerInfo, binary: Path) -> list[str]:
    """The ``llama-server`` command line for ``info`` (options of llama.cpp's ``common/arg.cpp``)."""
    return [
        str(binary),
        "--model",
        info.model_path,
        "--alias",
        "local",
        "--host",
        info.host,
        "--port",
        str(info.port),
        # Without a unified KV cache each of the --parallel slots gets ctx-size / parallel tokens.
        "--ctx-size",
        str(info.n_ctx * info.slots),
        "--parallel",
        str(info.slots),
        "--no-kv-unified",
        "--threads",
        str(info.threads),
        "--threads-batch",
        str(info.threads),
        "--cont-batching",
        # Threads sleep while they wait for work instead of spinning: beside task containers and other
        # processes on 2 cores, spinning threads starve each other (docs/design.md, "The embedded model server").
        "--poll",
        "0",
        "--cache-prompt",
        "--cache-ram",
        str(PROMPT_CACHE_MIB),
        "--jinja",
        "--no-webui",
    ]


def running_servers() -> list[ServerInfo]:
    """Servers whose state file names a live process; stale state files are removed."""
    found = []
    folder = _state_dir()
    for state in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            info = ServerInfo.model_validate_json(state.read_text())
        except ValueError:
            state.unlink(missing_ok=True)
            continue
        if process_alive(info.pid):
            found.append(info)
        else:
            state.unlink(missing_ok=True)
    return found


def serve(
    spec: LocalModelSpec,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    n_ctx: int = 16384,
    slots: int | None = None,
    threads: int | None = None,
    wait_s: float = 300.0,
    progress: Progress | None = None,
) -> ServerInfo:
    """Assemble ``spec`` if needed and start a detached ``llama-server`` for it; wait until it is ready.

    If a server started by twinforge already serves the same model on ``port``, it is returned as
    is (idempotent: concurrent twinforge processes share it) once it answers.

    Args:
        spec: The catalog entry.
        host: Bind address; must be loopback (twinforge never exposes the model off the machine).
        port: TCP port.
        n_ctx: Context window of each slot in tokens (a calibration trajectory of 40 model calls
            must fit in one).
        slots: Sequences decoded together; ``None``: :func:`machine_slots`.
        threads: CPU threads for generation and prompt evaluation, ``None`` for every core this
            process may use (bench/local_model.py measures the difference to half the cores).
        wait_s: Seconds to wait for the server to load the model and answer ``/health``.
        progress: Assembly progress callback ``(bytes_done, bytes_total)``.

    Returns:
        The server's recorded state.

    Raises:
        LocalModelError: The server is not built (the message gives ``twinforge model build``), a
            non-loopback host, the port taken by something else, or the server did not come up (the
            message quotes its log tail).
    """
    if host not in LOOPBACK:
        raise LocalModelError(f"host {host!r} is not loopback; the embedded server binds to 127.0.0.1 only")
    for info in running_servers():
        if info.port == port:
            if info.model == spec.name:
                return _await_running(info, wait_s)
            raise LocalModelError(
                f"port {port} is used by a twinforge server for {info.model} (pid {info.pid}); "
                f"stop it with `twinforge model stop --port {port}`"
            )
    if healthy(f"http://{host}:{port}/v1", timeout_s=1.0):
        raise LocalModelError(f"something else already answers on {host}:{port}; choose another --port")
    binary = require_server()
    path = assemble(spec, progress)
    folder = _state_dir()
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"{port}.log"
    info = ServerInfo(
        pid=0,
        model=spec.name,
        model_path=str(path),
        host=host,
        port=port,
        n_ctx=n_ctx,
        started_at=datetime.now(UTC),
        log=str(log),
        slots=slots or machine_slots(),
        threads=threads or usable_cores(),
    )
    with log.open("ab") as sink:
        process = subprocess.Popen(
            server_command(info, binary),
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=server_environment(),
            start_new_session=True,
        )
    info.pid = process.pid
    atomic_write_text(folder / f"{port}.json", info.model_dump_json(indent=2))
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            (folder / f"{port}.json").unlink(missing_ok=True)
            raise LocalModelError(f"llama.cpp server exited with {process.returncode}; log {log}:\n{_tail(log)}")
        if ready(info, timeout_s=1.0):
            return info
        time.sleep(0.5)
    stop(port)
    raise LocalModelError(f"llama.cpp server did not answer within {wait_s:.0f} s; log {log}:\n{_tail(log)}")


def _await_running(info: ServerInfo, wait_s: float) -> ServerInfo:
    """``info`` once its server is ready: polled with short requests for up to ``wait_s`` seconds.

    A server that is starting (not listening yet, or still loading the model) is waited for; one
    whose process exits meanwhile fails at once.

    Raises:
        LocalModelError: The process exited, or it did not answer within ``wait_s`` (the message
            gives the time waited and the log's tail).
    """
    started = time.monotonic()
    while True:
        left = wait_s - (time.monotonic() - started)
        if ready(info, timeout_s=max(0.5, min(10.0, left))):
            return info
        waited = time.monotonic() - started
        if not process_alive(info.pid):
            raise LocalModelError(
                f"the twinforge server for {info.model} on port {info.port} (pid {info.pid}) exited; "
                f"log {info.log}:\n{_tail(Path(info.log))}"
            )
        if waited >= wait_s:
            raise LocalModelError(
                f"the twinforge server for {info.model} on port {info.port} (pid {info.pid}) has not answered "
                f"for {waited:.0f} s; log {info.log}:\n{_tail(Path(info.log))}\n"
                f"stop it with `twinforge model stop --port {info.port}` and serve again"
            )
        time.sleep(0.5)


def stop(port: int | None = None, timeout_s: float = 20.0) -> list[ServerInfo]:
    """Stop twinforge's servers (all, or the one on ``port``); returns those stopped."""
    stopped = []
    for info in running_servers():
        if port is not None and info.port != port:
            continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(info.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while process_alive(info.pid) and time.monotonic() < deadline:
            _reap(info.pid)
            time.sleep(0.2)
        if process_alive(info.pid):
            os.killpg(info.pid, signal.SIGKILL)
            _reap(info.pid)
        (_state_dir() / f"{info.port}.json").unlink(missing_ok=True)
        stopped.append(info)
    return stopped


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def exited_server_note(base_url: str) -> str | None:
    """Why a loopback endpoint refuses connections when the server twinforge started there has exited.

    A crash of the compiled llama.cpp (for example a CPU instruction the machine advertises but
    faults on) kills the server on its first request with no Python traceback in its log, and the
    client sees only "Connection error". This names the server, its log and the log's last lines.

    Args:
        base_url: The endpoint that refused, e.g. ``http://127.0.0.1:8080/v1``.

    Returns:
        One paragraph, or None when no state file of twinforge's names a server on that port or its
        process is still alive (then the refusal has another cause).
    """
    parsed = urlparse(base_url)
    if parsed.hostname not in LOOPBACK or parsed.port is None:
        return None
    state = _state_dir() / f"{parsed.port}.json"
    try:
        info = ServerInfo.model_validate_json(state.read_text())
    except (OSError, ValueError):
        return None
    _reap(info.pid)  # a server started by this process stays a zombie, counted alive, until reaped
    if process_alive(info.pid):
        return None
    return (
        f"the local model server twinforge started on port {info.port} (pid {info.pid}, {info.model}) "
        f"has exited; a crash with no traceback in its log is the compiled llama.cpp (the kernel log, "
        f"dmesg, names the fault). Its log {info.log}, last lines:\n{_tail(Path(info.log), 5)}\n"
        "Restart it with `twinforge model serve`."
    )
