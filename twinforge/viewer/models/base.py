"""Base of the viewer's page models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class View(BaseModel):
    """A page model: strict, dumped in JSON mode for the API."""

    model_config = ConfigDict(extra="forbid")
