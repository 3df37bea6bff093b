"""Command-line options every stage shares, declared once (typer ``Annotated`` aliases).

A command takes ``workspace: WorkspaceOption = None`` and ``json_out: JsonOption = False`` and prints
its data with :func:`twinforge.core.console.print_json`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

WorkspaceOption = Annotated[
    Path | None,
    typer.Option("--workspace", "-w", help="Workspace folder (default: the workspace holding the current folder)."),
]
"""``--workspace/-w``: the workspace folder; ``None`` finds it from the current folder."""

JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout (progress on stderr).")]
"""``--json``: print the command's data as JSON instead of tables."""

__all__ = ["JsonOption", "WorkspaceOption"]
