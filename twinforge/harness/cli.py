"""``twinforge harness list|setup``: the harnesses, installed ahead of a run (docs/runtime.md, "Harnesses")."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from pydantic import BaseModel, ConfigDict
from rich.table import Table

from twinforge.core.console import err_console, out_console, print_json
from twinforge.core.options import JsonOption
from twinforge.harness.exceptions import HarnessError
from twinforge.harness.install import PACKAGES, install, install_dir, is_installed

harness_app = typer.Typer(help="Coding-agent harnesses: Mini-SWE-agent and the four CLIs.", no_args_is_help=True)


class HarnessStatus(BaseModel):
    """One harness as ``harness list`` shows it (``--json``: a list of these)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    runs: str
    version: str
    npm: str
    installed: bool
    path: str


def harness_status() -> list[HarnessStatus]:
    """Every harness, where it runs, its pinned version and whether it is installed."""
    rows = [
        HarnessStatus(name="mini-swe-agent", runs="host loop", version="2.4.6", npm="(pip)", installed=True, path="")
    ]
    for name, package in PACKAGES.items():
        rows.append(
            HarnessStatus(
                name=name,
                runs="task container",
                version=package.version,
                npm=package.npm,
                installed=is_installed(name, package.version),
                path=str(install_dir(name, package.version)),
            )
        )
    return rows


class SetupResult(BaseModel):
    """What ``harness setup`` did for one CLI (seconds 0 where the step was cached; ``--json``: a list of these)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    version: str
    install_s: float
    payload_s: float
    path: str


def setup_harness(name: str, version: str | None = None, *, image: bool = True) -> SetupResult:
    """Install one CLI from npm and build its harness payload image (idempotent).

    Raises:
        HarnessError: Unknown name, npm failure, or the image could not be built.
    """
    package = PACKAGES.get(name)
    if package is None:
        raise HarnessError(f"{name!r} needs no setup or is unknown; CLIs: {', '.join(PACKAGES)}")
    folder, install_s = install(package, version)
    payload_s = 0.0
    if image:
        from twinforge.harness.layer import build_payload
        from twinforge.taskpair.runtime.engine import client

        started = time.monotonic()
        cli = client()
        tag = f"twinforge-harness-payload/{name}:{version or package.version}"
        existed = bool(cli.images.list(name=tag))
        build_payload(cli, package, version or package.version)
        payload_s = 0.0 if existed else time.monotonic() - started
    return SetupResult(
        name=name,
        version=version or package.version,
        install_s=round(install_s, 2),
        payload_s=round(payload_s, 2),
        path=str(folder),
    )


@harness_app.command("list")
def list_command(json_out: JsonOption = False) -> None:
    """List the harnesses, where each runs, its pinned version and whether it is installed."""
    rows = harness_status()
    if json_out:
        print_json(rows)
        return
    table = Table("harness", "runs in", "version", "npm package", "installed")
    for r in rows:
        table.add_row(r.name, r.runs, r.version, r.npm, "yes" if r.installed else "no")
    out_console.print(table)


@harness_app.command("setup")
def setup_command(
    names: Annotated[list[str] | None, typer.Argument(help="CLIs to set up (default: all four).")] = None,
    version: Annotated[str | None, typer.Option(help="Version instead of the reference study's.")] = None,
    image: Annotated[bool, typer.Option(help="Also build the payload image the harness layers copy.")] = True,
    json_out: JsonOption = False,
) -> None:
    """Install CLIs from npm (pinned, scripts offline) and build their payload images; idempotent."""
    results = []
    for name in names or list(PACKAGES):
        with err_console.status(f"setting up {name}"):
            results.append(setup_harness(name, version, image=image))
    if json_out:
        print_json(results)
        return
    for r in results:
        out_console.print(f"{r.name}@{r.version}: install {r.install_s} s, payload image {r.payload_s} s ({r.path})")


def register(app: typer.Typer) -> None:
    """Add ``harness list|setup``."""
    app.add_typer(harness_app, name="harness")


__all__ = ["harness_status", "register", "setup_harness"]
