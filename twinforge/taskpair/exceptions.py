"""Errors of the task-pair runtime."""

from __future__ import annotations

from pathlib import Path

from twinforge.core.exceptions import TwinforgeError


class PairFormatError(TwinforgeError):
    """A task pair file is missing or invalid.

    Attributes:
        path: The offending file.
        errors: One line per problem, each naming the field.
    """

    def __init__(self, path: Path, errors: list[str]) -> None:
        super().__init__(f"{path}: " + "; ".join(errors))
        self.path = path
        self.errors = errors


class DockerUnavailable(TwinforgeError):
    """No Docker engine answers; the message says how to set it up (``twinforge env setup``)."""


class RunError(TwinforgeError):
    """A run could not be set up (image build failed, a service did not start).

    Attributes:
        step: Which step failed (``build``, ``services``, ``container``, ...).
    """

    def __init__(self, step: str, message: str) -> None:
        super().__init__(f"{step}: {message}")
        self.step = step
