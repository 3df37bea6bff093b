"""What one run used of its model: ``model.json`` beside the proxy transcript (docs/runtime.md, "Model channel").

Written by the proxy when the run's token is released (:meth:`twinforge.harness.proxy.ModelProxy.release`),
read by whatever reports tokens, cost and settings per run, per model x harness cell and per pair.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from twinforge.core.atomic import atomic_write_text
from twinforge.core.llm import Usage
from twinforge.core.settings import ApiShape, ModelPrice, ReasoningEffort

FILE = "model.json"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SettingsUsed(_Model):
    """The model block's settings the run was given."""

    temperature: float
    """Sampling temperature of the block (a harness that sets its own is recorded per call, ``sent``)."""
    max_tokens: int
    """The reply budget every call was capped to."""
    reasoning_effort: ReasoningEffort | None
    """The reasoning effort sent with every call (``None``: the harness's own)."""
    thinking_budget: int | None
    """The Messages thinking budget sent with every call (``None``: the harness's own)."""
    harness_api: Literal["chat", "responses"]
    """The OpenAI API harnesses that speak both were told to use."""
    served_shapes: list[ApiShape]
    """The shapes the upstream serves."""
    price: ModelPrice | None
    """The block's price (``None``: not counted)."""


class ShapesUsed(_Model):
    """One pair of shapes the run's calls went in."""

    harness: ApiShape
    """What the harness spoke."""
    upstream: ApiShape
    """What the upstream answered in (another shape where the proxy translated)."""


class RunModelRecord(_Model):
    """``model.json``: what one run used of its model."""

    schema_version: Literal[1] = 1
    run_id: str
    """The run."""
    model: str
    """The upstream model name."""
    provider: str
    """The block's provider."""
    settings: SettingsUsed
    """The block's settings."""
    shapes: list[ShapesUsed]
    """The shapes of the run's calls (usually one pair)."""
    usage: Usage
    """Every recorded call: count, prompt, cached and completion tokens, model seconds."""
    cost_usd: float | None
    """US dollars at the block's price (``None`` without one)."""
    calls: int
    """Agent turns forwarded."""
    side_calls: int
    """Side and count_tokens calls forwarded."""

    def write(self, folder: Path) -> Path:
        """Write ``folder/model.json`` atomically; returns its path."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / FILE
        atomic_write_text(path, self.model_dump_json(indent=1))
        return path

    @classmethod
    def read(cls, folder: Path) -> RunModelRecord:
        """Read ``folder/model.json``.

        Raises:
            pydantic.ValidationError: The file is not a run's model record (the field is named).
            OSError: It cannot be read.
        """
        return cls.model_validate_json((folder / FILE).read_text(encoding="utf-8"))
