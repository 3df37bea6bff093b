"""``twinforge view``: the workspace in a browser, served read-only or exported (docs/viewer.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from twinforge.core.console import err_console, print_json, progress
from twinforge.core.options import JsonOption, WorkspaceOption

if TYPE_CHECKING:
    from twinforge.viewer.serve import Serving

# The command imports what it runs on when it runs (docs/design.md, "Command-line start-up").


def view_command(
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port to serve on.")] = 8765,
    host: Annotated[
        str, typer.Option(help="Address to bind; anything but loopback needs the token printed in the URL.")
    ] = "127.0.0.1",
    export: Annotated[
        Path | None, typer.Option("--export", help="Write the pages as a static site into this folder and exit.")
    ] = None,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Show the benchmark in a browser: overview, pairs, runs, blueprints, and a JSON API (read-only)."""
    from twinforge.core.workspace import Workspace
    from twinforge.viewer.export import export_site
    from twinforge.viewer.serve import serve
    from twinforge.viewer.site import Site

    ws = Workspace.open(workspace)
    if export is not None:
        with progress(quiet=json_out) as bar:
            task = bar.add_task("exporting pages", total=None)
            done = export_site(Site(ws), export, lambda n, known: bar.update(task, completed=n, total=known))
        if json_out:
            print_json(done)
        else:
            err_console.print(f"wrote {done.pages} page(s) and {done.api} API file(s) to {done.folder}", markup=False)
            for line in done.missing:
                err_console.print(f"not exported: {line}", markup=False, style="yellow")
        return

    def ready(serving: Serving) -> None:
        err_console.print(f"twinforge view: {serving.url}  (read-only; ctrl+c stops)", markup=False)

    serve(ws, host, port, ready)


def register(app: typer.Typer) -> None:
    """Add ``view``."""
    app.command("view")(view_command)
