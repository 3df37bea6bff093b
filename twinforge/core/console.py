"""Terminal output shared by the commands: a stderr console and progress bars.

Progress goes to stderr so ``--json`` output on stdout stays machine-readable.
"""

from __future__ import annotations

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
