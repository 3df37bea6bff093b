"""The ``twinforge`` command: assembled from each package's ``register(app)``.

Packages declare their commands as entry points in the ``twinforge.commands`` group of
pyproject.toml (``name = "package.module:register"``), so the core imports no stage and the
one-way dependency rule stays checkable (docs/design.md, "Packages and their one-way
dependencies"; ``make check`` runs the import contracts). Commands appear in the order of the
entry point names (``10-core``, ``20-status``, ...).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib.metadata import entry_points

import typer
from rich.text import Text

from twinforge.console import err_console
from twinforge.exceptions import TwinforgeError

GROUP = "twinforge.commands"


def registrars() -> list[Callable[[typer.Typer], None]]:
    """Every package's ``register(app)``, from the installed distribution's entry points, in name order.

    Raises:
        TwinforgeError: No command is registered (twinforge is not installed: ``pip install -e .``).
    """
    found = sorted(entry_points(group=GROUP), key=lambda ep: ep.name)
    if not found:
        raise TwinforgeError(f"no {GROUP} entry points: install twinforge (pip install -e .) to get its commands")
    return [ep.load() for ep in found]


def build_app() -> typer.Typer:
    """The Typer application with every package's commands registered."""
    app = typer.Typer(
        name="twinforge",
        help="Grow safety benchmarks for coding agents: blueprints -> task pairs -> calibration.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    for register in registrars():
        register(app)
    return app


def main() -> None:
    """Console-script entry point.

    Usage errors are reported by Typer itself (standalone mode); a :class:`TwinforgeError` prints
    one clear line and exits 1; an interrupt exits 130 (committed work is kept).
    """
    try:
        app = build_app()
        app()
    except TwinforgeError as exc:
        err_console.print(Text("error: ", style="bold red") + Text(str(exc)), soft_wrap=True)
        sys.exit(1)
    except KeyboardInterrupt:
        err_console.print(Text("interrupted; committed work is kept", style="yellow"))
        sys.exit(130)
