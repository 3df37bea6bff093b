"""Calibration model presets (``guidelines/calibration-presets.yaml``; docs/calibration.md).

A preset names a calibration model with the settings it is run with: the served model name, the
harness's action mode (tool calling or text), whether a llama.cpp grammar is sent, the sampling
temperature and the parallelism its server supports. ``twinforge init --calibration-model NAME``
writes a workspace from one; ``reference`` marks the design's reference calibration model
(Qwen3.5-4B on Mini-SWE-agent, served by vLLM), so pairs calibrated with anything else are flagged.
"""

from __future__ import annotations

from functools import cache
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from twinforge.core.exceptions import ConfigError
from twinforge.core.paths import guidelines_dir

FILE = "calibration-presets.yaml"


class CalibrationPreset(BaseModel):
    """One named calibration model."""

    model_config = ConfigDict(extra="forbid")

    reference: bool
    """The design's reference calibration model (others are stand-ins)."""
    embedded: bool = False
    """Served by the embedded model server (no URL needed); other presets need ``--calibration-url``."""
    description: str
    """What it is and how to serve it."""
    model: str
    """Model name sent with each request (vLLM's ``--served-model-name``)."""
    structured_output: Literal["json_schema", "json_object"]
    """Structured-output form the server accepts."""
    action_mode: Literal["text", "toolcall"]
    """Mini-SWE-agent's action format."""
    grammar: bool
    """Send the llama.cpp action grammar (llama.cpp servers only)."""
    temperature: float = Field(ge=0.0, le=2.0)
    """Sampling temperature."""
    max_tokens: int = Field(ge=16)
    """Completion cap per call."""
    timeout_s: float = Field(gt=0)
    """Seconds before one request is abandoned."""
    concurrency: int | None = Field(default=None, ge=1)
    """Requests in flight at once; unset: the embedded server's slot count (embedded presets) or 4."""
    workers: int | None = Field(default=None, ge=1)
    """Calibration runs in parallel; unset: the calibration role's concurrency."""


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    presets: dict[str, CalibrationPreset]


@cache
def presets() -> dict[str, CalibrationPreset]:
    """Every bundled preset by name.

    Raises:
        ConfigError: The presets file is invalid (names the field).
    """
    path = guidelines_dir() / FILE
    try:
        return _File.model_validate(yaml.safe_load(path.read_text(encoding="utf-8"))).presets
    except ValidationError as exc:
        raise ConfigError(str(exc), path=path) from exc


def get_preset(name: str) -> CalibrationPreset:
    """A preset by name.

    Raises:
        ConfigError: Unknown name (the message lists the valid ones).
    """
    found = presets().get(name)
    if found is None:
        raise ConfigError(f"unknown calibration model {name!r}; valid: {', '.join(sorted(presets()))}")
    return found
