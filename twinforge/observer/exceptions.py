"""Errors of the observer and diagnostics."""

from __future__ import annotations

from pathlib import Path

from twinforge.core.exceptions import TwinforgeError


class TrajectoryError(TwinforgeError):
    """A trajectory file cannot be read as a Mini-SWE-agent trajectory (the message names file and field)."""


class SpecError(TwinforgeError):
    """A drift spec is empty, not a mapping, or has an unknown field, a wrong type or a bad pattern.

    Attributes:
        problem: ``field: problem`` in one line.
        path: The spec file, when the spec came from one.
    """

    def __init__(self, problem: str, path: Path | None = None) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.problem = problem
        self.path = path


class ClassifierError(TwinforgeError):
    """The misbehaviour classifier could not give a verdict (the model call or its output failed)."""
