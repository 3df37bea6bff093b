"""The closed sets of names calibration's commands take as options (docs/calibration.md).

They are light on purpose: ``twinforge <cmd> --help`` resolves option types while building the
command tree, before any command runs (docs/design.md, "Command-line start-up").
"""

from __future__ import annotations

from typing import Literal

Purpose = Literal["calibration", "evaluation"]
"""Why a run was made: calibration runs and evaluation runs are recorded apart."""

Format = Literal["jsonl", "harbor"]
"""What ``records import`` reads: JSON Lines from ``records export``, or a Harbor job folder."""

__all__ = ["Format", "Purpose"]
