"""``evaluate``: run admitted pairs with a named model on a harness for benchmark results (one grid cell).

docs/calibration.md, "Evaluation". The cell's parts are :mod:`twinforge.evaluation.cells`; the grid
of many models and harnesses is :mod:`twinforge.evaluation.grid`, which this runs with one cell.
"""

from __future__ import annotations

from collections.abc import Callable

from twinforge.core.workspace import Workspace
from twinforge.evaluation.cells import EvaluationReport
from twinforge.evaluation.exceptions import EvaluationError
from twinforge.evaluation.grid import evaluate_grid
from twinforge.runs.results import RunSummary


def evaluate(
    workspace: Workspace,
    model_name: str,
    *,
    harness: str = "mini-swe-agent",
    runs: int | None = None,
    pairs: list[str] | None = None,
    executor: str = "local",
    address: str | None = None,
    workers: int | None = None,
    max_calls: int | None = None,
    preflight: bool = True,
    on_done: Callable[[RunSummary | None, str | None], None] | None = None,
    on_wait: Callable[[int], None] | None = None,
    spend_ceiling: float | None = None,
) -> EvaluationReport:
    """Run admitted pairs K times per side with ``[evaluation.models.<model_name>]`` on one harness.

    One cell of :func:`twinforge.evaluation.grid.evaluate_grid` (which runs many); the rule of
    ``[evaluation] incompatible`` applies here too.

    Args:
        workspace: The workspace.
        model_name: A model defined under ``[evaluation.models]``.
        harness: ``name[@version][:mode]`` (docs/calibration.md, "Harnesses").
        runs: K runs per side (default ``[evaluation] runs``: 4, the reference study's k).
        pairs: Pair ids (default: every admitted pair).
        executor: ``local`` or ``ray``.
        address: Ray cluster address.
        workers: Parallel runs.
        max_calls: Cap Mini-SWE-agent's model calls below the tasks' budgets (part of the run key).
        preflight: Check the cell before any run (docs/calibration.md, "Preflight").
        on_done: Called per finished run.
        on_wait: Called while runs another process holds are awaited.
        spend_ceiling: US dollars the call may spend (default ``[spend] ceiling_usd``; docs/runtime.md,
            "Spend ceiling").

    Raises:
        EvaluationError: Unknown model or harness, the rule excludes the combination, a pair not
            admitted or changed since, or the preflight failed (nothing ran).
    """
    grid = evaluate_grid(
        workspace,
        [model_name],
        harness,
        runs=runs,
        pairs=pairs,
        executor=executor,
        address=address,
        workers=workers,
        max_calls=max_calls,
        preflight=preflight,
        on_done=on_done,
        on_wait=on_wait,
        spend_ceiling=spend_ceiling,
    )
    (cell,) = grid.cells
    if cell.evaluation is None:
        raise EvaluationError(f"{model_name} / {cell.harness}: skipped by {cell.skipped}")
    return cell.evaluation
