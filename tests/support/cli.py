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
