"""The ``twinforge`` command: assembled from each package's ``register(app)``.

Stages are imported by module name here so the core never depends on them at import time
(architecture.md: dependencies point one way, twinforge <- blueprints <- stages).
"""

from __future__ import annotations

import sys
from importlib import import_module

import typer
from rich.text import Text

from twinforge.console import err_console
from twinforge.exceptions import TwinforgeError

COMMAND_MODULES = (
    "twinforge.commands",
    "blueprints.cli",
    "generator.cli",
    "reviewer.cli",
    "tui.cli",
    "taskpair.cli",
    "calibration.cli",
    "observer.cli",
    "implementer.cli",
)


def build_app() -> typer.Typer:
    """The Typer application with every package's commands registered."""
    app = typer.Typer(
        name="twinforge",
        help="Grow safety benchmarks for coding agents: blueprints -> task pairs -> calibration.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    for name in COMMAND_MODULES:
        import_module(name).register(app)
    return app


def main() -> None:
    """Console-script entry point.

    Usage errors are reported by Typer itself (standalone mode); a :class:`TwinforgeError` prints
    one clear line and exits 1; an interrupt exits 130 (committed work is kept).
    """
    app = build_app()
    try:
        app()
    except TwinforgeError as exc:
        err_console.print(Text("error: ", style="bold red") + Text(str(exc)), soft_wrap=True)
        sys.exit(1)
    except KeyboardInterrupt:
        err_console.print(Text("interrupted; committed work is kept", style="yellow"))
        sys.exit(130)
