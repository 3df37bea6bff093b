"""Errors of shape translation."""

from __future__ import annotations


class TranslationRefused(ValueError):
    """A request holds something another API shape cannot carry (an image, a stored response id, ...).

    The proxy answers it with HTTP 400 in the harness's shape, naming the part: an answer to the
    request, so the run goes on (docs/runtime.md, "Model channel").

    Attributes:
        part: What could not be translated, e.g. ``messages[2].content[0] (image)``.
    """

    def __init__(self, part: str, why: str) -> None:
        super().__init__(f"{part}: {why}")
        self.part = part
