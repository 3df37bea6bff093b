"""Building llama.cpp's server from the pinned sdist: the checks around the compile (the compile itself
runs in the set-up, `make setup`, and every real-server test uses its result)."""

from __future__ import annotations

import io
import os
import sys
import tarfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from twinforge.core.exceptions import LocalModelError
from twinforge.core.localmodel.build import (
    CMAKE_OPTIONS,
    NO_AMX_FLAGS,
    SDIST_SHA256,
    ServerBuild,
    built,
    check_sdist,
    cmake_configure_command,
    compile_percent,
    compiler_flags,
    extract_vendored_source,
    require_server,
    run_logged,
    server_dir,
)
from twinforge.core.localmodel.server import ServerInfo, server_command, server_environment


def test_a_source_archive_with_another_hash_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "llama_cpp_python-0.3.36.tar.gz"
    fake.write_bytes(b"not the sdist the package index served")
    with pytest.raises(LocalModelError, match=f"is not the recorded {SDIST_SHA256}.*nothing was built"):
        check_sdist(fake)
    with pytest.raises(LocalModelError, match="cannot read"):
        check_sdist(tmp_path / "missing.tar.gz")


def _tar(path: Path, members: dict[str, bytes], links: dict[str, str] | None = None) -> None:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            archive.addfile(info)


def test_only_the_vendored_tree_is_unpacked_and_nothing_outside_it(tmp_path: Path) -> None:
    sdist = tmp_path / "s.tar.gz"
    _tar(
        sdist,
        {
            "pkg-0.3.36/vendor/llama.cpp/CMakeLists.txt": b"project(llama)",
            "pkg-0.3.36/vendor/llama.cpp/tools/server/server.cpp": b"int main(){}",
            "pkg-0.3.36/llama_cpp/llama.py": b"bindings",
            "pkg-0.3.36/vendor/llama.cpp/../../../escape.txt": b"traversal",
        },
        links={"pkg-0.3.36/vendor/llama.cpp/evil": "/etc/passwd"},
    )
    out = tmp_path / "out"
    with pytest.raises(LocalModelError, match="cannot unpack"):
        extract_vendored_source(sdist, out)  # the data filter refuses the link out of the tree
    assert not (tmp_path / "escape.txt").exists()
    clean = tmp_path / "clean.tar.gz"
    _tar(
        clean,
        {
            "pkg-0.3.36/vendor/llama.cpp/CMakeLists.txt": b"project(llama)",
            "pkg-0.3.36/vendor/llama.cpp/tools/server/server.cpp": b"int main(){}",
            "pkg-0.3.36/llama_cpp/llama.py": b"bindings",
        },
    )
    source = extract_vendored_source(clean, tmp_path / "clean")
    assert (source / "tools" / "server" / "server.cpp").read_bytes() == b"int main(){}"
    assert not list((tmp_path / "clean").rglob("llama.py"))
    empty = tmp_path / "empty.tar.gz"
    _tar(empty, {"pkg/README.md": b"no sources"})
    with pytest.raises(LocalModelError, match=r"holds no vendor/llama.cpp source tree"):
        extract_vendored_source(empty, tmp_path / "empty")


def test_the_build_has_no_amx_and_reaches_no_network() -> None:
    assert compiler_flags("x86_64") == NO_AMX_FLAGS == "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    assert compiler_flags("aarch64") == ""
    command = cmake_configure_command(Path("/src"), Path("/build"))
    assert command[:5] == ["cmake", "-S", "/src", "-B", "/build"]
    for option in ("LLAMA_USE_PREBUILT_UI=OFF", "LLAMA_BUILD_UI=OFF", "LLAMA_OPENSSL=OFF", "BUILD_SHARED_LIBS=OFF"):
        assert f"-D{option}" in command
    assert CMAKE_OPTIONS["GGML_NATIVE"] == "ON"


def _record(**changes: object) -> ServerBuild:
    values: dict[str, object] = {
        "sdist": "llama-cpp-python==0.3.36",
        "sdist_sha256": SDIST_SHA256,
        "compiler_flags": NO_AMX_FLAGS,
        "cmake_options": dict(CMAKE_OPTIONS),
        "machine": "x86_64",
        "built_at": datetime.now(UTC),
        "seconds": 1.0,
    }
    return ServerBuild.model_validate({**values, **changes})


def test_a_build_counts_only_with_its_record_and_an_executable(tmp_path: Path) -> None:
    folder = tmp_path / "llama-server-0.3.36"
    folder.mkdir()
    with pytest.raises(LocalModelError, match="twinforge model build"):
        require_server(folder)
    binary = folder / "llama-server"
    binary.write_text("#!/bin/sh\n")
    assert built(folder) is None  # no build.json
    (folder / "build.json").write_text(_record().model_dump_json())
    assert built(folder) is None  # not executable
    binary.chmod(0o755)
    assert built(folder) is not None and require_server(folder) == binary
    (folder / "build.json").write_text(_record(sdist_sha256="0" * 64).model_dump_json())
    assert built(folder) is None  # built from another source
    (folder / "build.json").write_text('{"schema_version": 1, "sdist": "x", "extra": 1}')
    assert built(folder) is None  # a record that does not validate


def test_the_build_lives_in_this_environment() -> None:
    assert server_dir().is_relative_to(Path(sys.prefix)) and server_dir().name == "llama-server-0.3.36"


def test_the_server_command_sizes_slots_and_context(tmp_path: Path) -> None:
    info = ServerInfo(
        pid=0,
        model="gemma3-270m",
        model_path=str(tmp_path / "m.gguf"),
        host="127.0.0.1",
        port=8099,
        n_ctx=4096,
        started_at=datetime.now(UTC),
        log=str(tmp_path / "log"),
        slots=4,
        threads=2,
    )
    command = server_command(info, tmp_path / "llama-server")

    def value(flag: str) -> str:
        return command[command.index(flag) + 1]

    assert value("--parallel") == "4" and value("--ctx-size") == str(4 * 4096)  # n_ctx is per slot
    assert "--no-kv-unified" in command  # so each slot has its own n_ctx, as the settings say
    assert value("--host") == "127.0.0.1" and value("--alias") == "local" and value("--threads") == "2"
    assert "--no-webui" in command and "--jinja" in command


def test_the_server_inherits_no_llama_options_from_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLAMA_ARG_HOST", "0.0.0.0")
    monkeypatch.setenv("LLAMA_ARG_N_PARALLEL", "1")
    env = server_environment()
    assert not [k for k in env if k.startswith("LLAMA_ARG_")]
    assert env["PATH"] == os.environ["PATH"]


@pytest.mark.parametrize(
    ("line", "percent"),
    [
        ("[ 45%] Building CXX object common/CMakeFiles/common.dir/arg.cpp.o", 45),
        ("[100%] Built target llama-server", 100),
        ("[12/48] Building CXX object src/llama.cpp.o", 25),
        ("-- Configuring done", None),
        ("[0/0] nothing", None),
    ],
)
def test_compile_progress_is_read_from_make_and_ninja_lines(line: str, percent: int | None) -> None:
    assert compile_percent(line) == percent


def test_a_compile_reports_each_higher_percentage_and_keeps_its_log(tmp_path: Path) -> None:
    script = "; ".join(f"print({text!r})" for text in ["[  5%] a", "warning: x", "[ 50%] b", "[ 50%] c", "[100%] d"])
    seen: list[int] = []
    log = tmp_path / "build.log"
    run_logged([sys.executable, "-c", script], dict(os.environ), log, truncate=True, on_progress=seen.append)
    assert seen == [5, 50, 100]
    assert "warning: x" in log.read_text() and log.read_text().startswith("$ ")
    with pytest.raises(LocalModelError, match=r"(?s)failed with 3; log .*boom"):
        run_logged([sys.executable, "-c", "print('boom'); raise SystemExit(3)"], dict(os.environ), log)
