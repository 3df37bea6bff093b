"""The ``twinforge`` command: the one module that knows every stage (docs/design.md, "Packages").

Each package keeps its own commands in its ``cli.py`` with a ``register(app)``; this assembly
imports them by name, in the order the commands appear in ``--help``. Nothing below it imports a
stage, and the import contract in ``make check`` holds that (the layers in pyproject.toml).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import typer
from rich.text import Text

from twinforge.blueprints import cli as blueprints_cli
from twinforge.calibration import cli as calibration_cli
from twinforge.core import cli as core_cli
from twinforge.core.console import err_console
from twinforge.core.exceptions import TwinforgeError
from twinforge.evaluation import cli as evaluation_cli
from twinforge.exporter import cli as exporter_cli
from twinforge.generator import cli as generator_cli
from twinforge.harness import cli as harness_cli
from twinforge.implementer import cli as implementer_cli
from twinforge.observer import cli as observer_cli
from twinforge.reviewer import cli as reviewer_cli
from twinforge.runs import cli as runs_cli
from twinforge.taskpair import cli as taskpair_cli
from twinforge.tui import cli as tui_cli
from twinforge.viewer import cli as viewer_cli

REGISTRARS: tuple[Callable[[typer.Typer], None], ...] = (
    core_cli.register,  # init, model
    blueprints_cli.register,  # status, blueprint
    generator_cli.register,  # generate
    reviewer_cli.register,  # review
    tui_cli.register,  # queue
    taskpair_cli.register,  # env, new-pair, validate, taxonomy
    harness_cli.register,  # harness list, harness setup
    calibration_cli.register,  # calibrate, admit
    evaluation_cli.register,  # evaluate, report
    runs_cli.register,  # run, redetect, records
    implementer_cli.register,  # implement
    lambda app: observer_cli.register(app, runs_cli.workspace_lookup),  # diagnose, trajectory (run ids via records)
    exporter_cli.register,  # export
    viewer_cli.register,  # view
)
"""Every package's ``register(app)``, in the order their commands appear in ``--help``."""


def build_app() -> typer.Typer:
    """The Typer application with every package's commands registered."""
    app = typer.Typer(
        name="twinforge",
        help="Grow safety benchmarks for coding agents: blueprints -> task pairs -> calibration.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    for register in REGISTRARS:
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
