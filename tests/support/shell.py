"""A real bash in a folder: the Shell protocol without a container."""

from __future__ import annotations

import subprocess
from pathlib import Path

from twinforge.taskpair.runtime.session import CommandRecord


class FolderShell:
    """A real bash in a temporary folder (the Shell protocol without a container)."""

    def __init__(self, root: Path, killed: bool = False) -> None:
        self.root = root
        self.killed = killed
        self.commands: list[tuple[str, float | None]] = []

    def exec(self, command: str, timeout_s: float | None = None) -> CommandRecord:
        self.commands.append((command, timeout_s))
        done = subprocess.run(["bash", "-c", command], cwd=self.root, capture_output=True, text=True, check=False)
        return CommandRecord(
            command=command,
            exit_code=done.returncode,
            output=done.stdout + done.stderr,
            seconds=0.0,
            killed=self.killed,
        )
