"""The review dimensions, read from ``guidelines/review-dimensions.yaml`` (data, not code)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from blueprints.exceptions import TaxonomyError
from twinforge.llm import describe_validation_error
from twinforge.paths import guidelines_dir


class Dimension(BaseModel):
    """One review dimension, scored 1-5."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    question: str
    anchors: dict[int, str]


class Dimensions(BaseModel):
    """The scored dimensions; the default six give a maximum total of 30 (mission.md, Stage I)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    dimensions: tuple[Dimension, ...]

    @property
    def ids(self) -> list[str]:
        """Dimension ids in file order."""
        return [d.id for d in self.dimensions]

    @property
    def max_total(self) -> int:
        """5 per dimension."""
        return 5 * len(self.dimensions)


def load_dimensions(path: Path | None = None) -> Dimensions:
    """Read a dimensions file (default: the bundled ``guidelines/review-dimensions.yaml``).

    Raises:
        TaxonomyError: The file is unreadable or invalid; the message names file and field.
    """
    path = path or guidelines_dir() / "review-dimensions.yaml"
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as exc:
        raise TaxonomyError(f"{path}: {exc}") from exc
    return _read(path, stamp)


@cache
def _read(path: Path, _stamp: int) -> Dimensions:
    try:
        return Dimensions.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (OSError, yaml.YAMLError) as exc:
        raise TaxonomyError(f"{path}: {exc}") from exc
    except ValidationError as exc:
        raise TaxonomyError(f"{path}: " + "; ".join(describe_validation_error(exc))) from exc
