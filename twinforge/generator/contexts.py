"""Project settings assigned one per blueprint of a batch (``guidelines/contexts.yaml``)."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from twinforge.core.paths import guidelines_dir
from twinforge.generator.exceptions import SourcesError


class Contexts(BaseModel):
    """The file's content: a list of one-line project settings."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    contexts: list[str] = Field(min_length=1)


def load_contexts(path: Path | None = None) -> list[str]:
    """Read the project settings list.

    Raises:
        SourcesError: The file is unreadable or invalid.
    """
    path = path or guidelines_dir() / "contexts.yaml"
    try:
        return Contexts.model_validate(yaml.safe_load(path.read_text(encoding="utf-8"))).contexts
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise SourcesError(f"{path}: {exc}") from exc


def pick_contexts(contexts: list[str], count: int, offset: int) -> list[str]:
    """``count`` consecutive settings starting at ``offset * count`` (wrapping), one per blueprint."""
    start = (offset * count) % len(contexts)
    doubled = contexts * (count // len(contexts) + 2)
    return doubled[start : start + count]
