"""The ``twinforge`` command: assembled from each package's ``register(app)``.

Stages are imported by module name here so the core never depends on them at import time
(architecture.md: dependencies point one way, twinforge <- blueprints <- stages).
"""

from __future__ import annotations

import sys
from importlib import import_module

import click
import typer
from rich.text import Text

from twinforge.console import err_console
from twinforge.exceptions import TwinforgeError

COMMAND_MODULES = (
    "twinforge.commands",
    "blueprints.cli",
    "generator.cli",
    "reviewer.cli",
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
    """Console-script entry point; a :class:`TwinforgeError` prints one clear line and exits 1."""
    app = build_app()
    try:
        code = app(standalone_mode=False)
    except TwinforgeError as exc:
        err_console.print(Text("error: ", style="bold red") + Text(str(exc)))
        sys.exit(1)
    except (click.Abort, KeyboardInterrupt):
        err_console.print(Text("interrupted; committed work is kept", style="yellow"))
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
