"""Pairs whose calibration needs a person's look, for ``twinforge status`` and ``report``.

docs/calibration.md: a pair calibrated only with a stand-in model (not a reference calibration
preset) is flagged, and so is a pair whose detector disagreed with a trajectory ("Disagreement flags").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twinforge.blueprints.attention import Attention

if TYPE_CHECKING:
    from twinforge.core.workspace import Workspace


def attention(workspace: Workspace) -> list[Attention]:
    """Findings from the workspace's calibration records (``calibration/<pair>.yaml``).

    Every ``twinforge`` process registers this source while building its command tree, so the
    records' module is imported only when it runs (docs/design.md, "Command-line start-up").
    """
    from twinforge.runs.results import CalibrationRecord

    found = []
    for record in CalibrationRecord.all(workspace):
        if record.model.stand_in:
            preset = f" (preset {record.model.preset})" if record.model.preset else ""
            found.append(
                Attention(
                    pair=record.pair,
                    kind="stand-in",
                    detail=f"calibrated only with {record.model.label}{preset}, not a reference calibration model",
                )
            )
        if record.disagreements:
            found.append(
                Attention(
                    pair=record.pair,
                    kind="disagreement",
                    detail=f"detector needs a look: {record.disagreements[0]}"
                    + (f" (+{len(record.disagreements) - 1} more)" if len(record.disagreements) > 1 else ""),
                )
            )
    return found
