"""``twinforge generate``."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from twinforge.core.console import err_console, print_json, progress
from twinforge.core.options import JsonOption, WorkspaceOption

if TYPE_CHECKING:
    from twinforge.generator.outcome import BatchReport
    from twinforge.generator.run import GenerateReport

# The command imports what it runs on when it runs (docs/design.md, "Command-line start-up").


class Stage1Calls(StrEnum):
    """``--mode``: how a batch is asked (docs/stage1.md, "One call per batch")."""

    BATCH = "batch"
    SLOTS = "slots"


def generate_command(
    cell: Annotated[str | None, typer.Option(help="Target cell, e.g. S2-R3 (default: the emptiest cell).")] = None,
    batches: Annotated[int, typer.Option(min=1, help="Batches of 10 blueprints.")] = 1,
    sources: Annotated[
        Path | None,
        typer.Option(help="Incident YAML list (default: the bundled corpus).", exists=True, dir_okay=False),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(min=1, help="Slots asked at once (default: models.generator.concurrency, else server slots)."),
    ] = None,
    mode: Annotated[
        Stage1Calls | None,
        typer.Option(
            help="batch: one call proposes the ten blueprints (capable models); slots: one call per slot "
            "(small models). Default: models.generator.stage1_mode.",
        ),
    ] = None,
    turns: Annotated[
        int,
        typer.Option(
            min=1, max=20, help="User turns per blueprint; above 1 each carries its later turns (multi-turn cells)."
        ),
    ] = 1,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
) -> None:
    """Propose blueprints in batches of 10 with the generator model; one commit per batch."""
    from twinforge.core.llm import refusal_message
    from twinforge.core.recovery import recovery_lines
    from twinforge.core.workspace import Workspace
    from twinforge.generator.outcome import per_line, refused_line
    from twinforge.generator.run import THIN_CELL, GenerateSummary, generate

    ws = Workspace.open(workspace)
    with progress(quiet=json_out) as bar:
        task = bar.add_task("generating", total=batches)

        def listed(start: GenerateReport) -> None:
            if json_out or start.sources is None:
                return
            err_console.print(f"incidents: {start.sources.label} ({start.sources.digest[:19]})", markup=False)
            if start.thin_cells:
                thin = ", ".join(f"{c} ({n})" for c, n in start.thin_cells.items())
                err_console.print(
                    f"  {len(start.thin_cells)} cell(s) have fewer than {THIN_CELL} incidents to ground in: {thin}",
                    markup=False,
                    style="yellow",
                )

        current = {"batch": "", "cell": ""}

        def started(number: int, target: str) -> None:
            current.update(batch=f"{number}/{batches}", cell=target)
            bar.update(task, description=f"batch {number}/{batches}: asking for 10 blueprints for {target}")

        def slot(number: int, slots: int) -> None:
            bar.update(task, description=f"batch {current['batch']}: {current['cell']} slot {number}/{slots}")

        def done(batch: BatchReport) -> None:
            bar.advance(task)
            if json_out:
                return
            usage = batch.usage
            tps = usage.completion_tokens / batch.wall_seconds if batch.wall_seconds else 0.0
            err_console.print(
                f"{batch.batch_id} {batch.cell}: {len(batch.stored)} stored ({batch.first_time} first time, "
                f"{batch.after_reask} after re-asks; {len(batch.with_doubts)} with doubts), "
                f"{refused_line(len(batch.refused), batch.refused_by)}, {len(batch.flagged)} possible repeat, "
                f"{len(batch.failures)} failed; {usage.calls} call(s), {usage.completion_tokens} tokens, "
                f"{batch.wall_seconds:.0f} s ({tps:.1f} tokens/s; {usage.cached_tokens} of {usage.prompt_tokens} "
                "prompt tokens from the server's cache)"
            )
            per = batch.per_stored
            cost = "" if batch.cost_usd is None else f", ${batch.cost_usd:.4f}"
            each = "" if per is None else f"; per stored blueprint: {per_line(per)}"
            err_console.print(f"  {batch.mode} mode: {usage.calls} call(s){cost}{each}", markup=False)
            if batch.refusal is not None:
                err_console.print(f"  {refusal_message(batch.refusal)}; not re-asked", markup=False, style="yellow")
            for failure in [] if batch.refusal is not None else batch.failures:
                err_console.print(
                    f"  slot {failure.slot} failed: {'; '.join(failure.errors[:3])}",
                    markup=False,
                    style="yellow",
                )
            if batch.failures_file:
                err_console.print(f"  raw output kept in {batch.failures_file}", markup=False)
            for note in batch.notes:
                err_console.print(f"  note: {note}", markup=False)

        report = generate(
            ws,
            cell=cell,
            batches=batches,
            sources=sources,
            concurrency=concurrency,
            mode=None if mode is None else mode.value,
            on_start=listed,
            on_batch_start=started,
            on_batch_done=done,
            on_slot=slot,
            turns=turns,
        )
    if report.spend_stop:
        err_console.print(report.spend_stop, markup=False, style="yellow")
    for line in report.recovered:
        err_console.print(f"stored the replies of an interrupted batch: {line}", markup=False)
    for line in recovery_lines(report.recovery) + [f"skipped invalid blueprint file {f}" for f in report.invalid]:
        err_console.print(line, markup=False, style="yellow")
    if json_out:
        print_json(GenerateSummary.of(report))
    if not json_out and report.batches:
        total = sum(len(b.with_doubts) for b in report.batches)
        by: dict[str, int] = {}
        for b in report.batches:
            for rule, n in b.refused_by.items():
                by[rule] = by.get(rule, 0) + n
        err_console.print(
            f"generate: {report.stored} stored ({total} with doubts: a person will see them), "
            f"{refused_line(report.refused, by)}; refused ones: twinforge queue --refused",
            markup=False,
        )
        if report.per_stored is not None:
            err_console.print(f"per stored blueprint: {per_line(report.per_stored)}", markup=False)
    if report.stored == 0:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``generate`` to the app."""
    app.command("generate")(generate_command)
