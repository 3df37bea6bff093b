"""Running the twinforge command as a user does (a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "twinforge", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        timeout=120,
    )


HEAVY_AT_START = (
    "sqlalchemy",
    "bashlex",
    "lemminflect",
    "docker",
    "ray",
    "matplotlib",
    "openai",
    "anthropic",
    "httpx",
    "minisweagent",
    "litellm",
    "tenacity",
    "starlette",
    "uvicorn",
    "textual",
    "git",
    "gitdb",
    "jinja2",
    "pydantic_settings",
    "rapidfuzz",
    "tomli_w",
)
"""Top-level packages a command's implementation needs, which building the command tree must not
import (docs/design.md, "Command-line start-up"); tests/test_cli_startup.py and bench/cli_startup.py."""


def importtime_rows(stderr: str) -> list[tuple[int, str]]:
    """``python -X importtime`` output as ``(self time in microseconds, module name)`` rows, in import order."""
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cumulative, name = line.removeprefix("import time:").split("|", 2)
        rows.append((int(self_us), name.strip()))
    return rows


def heavy_packages(names: set[str] | list[str], heavy: tuple[str, ...] = HEAVY_AT_START) -> list[str]:
    """The top-level packages of ``names`` (module names) that are in ``heavy``, sorted."""
    return sorted({name.split(".")[0] for name in names} & set(heavy))
