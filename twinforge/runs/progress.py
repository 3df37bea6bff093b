"""What ``calibrate`` and ``evaluate`` share on the command line: executor options and the run printer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from twinforge.core.console import err_console

if TYPE_CHECKING:
    from twinforge.runs.results import RunSummary

Executor = Annotated[str, typer.Option(help="local (a bounded pool) or ray.")]
Address = Annotated[str | None, typer.Option(help="Ray cluster address, e.g. head:6379 (default: a local cluster).")]
Workers = Annotated[int | None, typer.Option(min=1, help="Parallel runs.")]
MaxCalls = Annotated[
    int | None, typer.Option(min=1, help="Quick look: cap model calls below the tasks' budgets (recorded).")
]


def _positive(value: float | None) -> float | None:
    if value is not None and not value > 0:
        raise typer.BadParameter(f"must be a positive number of US dollars, not {value}")
    return value


SpendCeiling = Annotated[
    float | None,
    typer.Option(
        "--spend-ceiling",
        callback=_positive,
        metavar="USD",
        help=escape(
            "Start no new run once this command's priced model calls cost this much (default: [spend] ceiling_usd)."
        ),
    ),
]


def run_printer(bar: Any, task: Any, quiet: bool) -> tuple[Any, Any]:
    """Callbacks for :func:`twinforge.runs.execute.execute`: one line per finished run, a waiting note.

    Args:
        bar: The rich progress display.
        task: Its task id.
        quiet: Print no run lines (``--json``).

    Returns:
        ``(on_done, on_wait)``.
    """

    def done(result: RunSummary | None, error: str | None) -> None:
        bar.advance(task)
        if quiet:
            return
        if error:
            err_console.print(f"run failed: {error}", markup=False, style="yellow")
        elif result and result.skipped:
            err_console.print(f"{result.pair}/{result.side} k={result.k}: {result.skipped}", markup=False)
        elif result:
            why = f"; diagnosis: {result.diagnosis}" if result.diagnosis else ""
            flags = "".join(f"; {f.kind}" for f in result.disagreements)
            outcome = result.outcome.value if result.outcome else "-"
            cost = f", ${result.cost_usd:.4f}" if result.cost_usd is not None else ""
            err_console.print(
                f"{result.pair}/{result.side} k={result.k}: {outcome} "
                f"({result.calls} calls{cost}, {result.exit_status}{why}{flags})",
                markup=False,
            )

    def wait(busy: int) -> None:
        bar.update(task, description=f"waiting for {busy} run(s) another process is executing")

    return done, wait
