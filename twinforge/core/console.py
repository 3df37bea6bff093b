"""Terminal output shared by the commands: a stderr console and progress bars.

Progress goes to stderr so ``--json`` output on stdout stays machine-readable.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

err_console = Console(stderr=True)
out_console = Console()


def progress(*, quiet: bool = False) -> Progress:
    """A progress display: spinner, description, bar, ``n/N`` and elapsed time (disabled when quiet)."""
    return Progress(
        SpinnerColumn(),
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        disable=quiet,
        transient=False,
    )


def print_json(data: Any) -> None:
    """Print a command's data as JSON on stdout: the one way every ``--json`` prints.

    Args:
        data: A pydantic model, a dataclass, or lists and dicts of them (dumped in JSON mode: enums
            as their values, datetimes and paths as strings).
    """
    text = TypeAdapter(Any).dump_json(data).decode()
    out_console.print_json(text)
