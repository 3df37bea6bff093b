"""Errors of the exporter."""

from __future__ import annotations

from twinforge.core.exceptions import TwinforgeError


class ExportError(TwinforgeError):
    """A pair cannot be exported as it is; the message names the pair and what to change."""


class HarborToolsError(TwinforgeError):
    """The container that runs Harbor here could not be built or Harbor failed in it.

    Attributes:
        step: Which step failed (``wheels``, ``rootfs``, ``image``, ``harbor``).
    """

    def __init__(self, step: str, message: str) -> None:
        super().__init__(f"{step}: {message}")
        self.step = step
