"""The review dimensions, read from ``guidelines/review-dimensions.yaml`` (data, not code)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from twinforge.blueprints.blueprint import FIELDS
from twinforge.blueprints.exceptions import TaxonomyError
from twinforge.core.llm import describe_validation_error
from twinforge.core.paths import guidelines_dir


class Anchor(BaseModel):
    """What one score of a dimension looks like, with a short example (docs/stage1.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    example: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _plain_text(cls, value: Any) -> Any:
        # A bare string is an anchor without an example (the older file shape).
        return {"text": value} if isinstance(value, str) else value


class Dimension(BaseModel):
    """One review dimension, scored 1-5, with anchored rubrics (1, 3 and 5 at least)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    question: str
    anchors: dict[int, Anchor]
    evidence: tuple[str, ...] = ()
    """Blueprint fields the reviewer's quote for this dimension usually comes from (named in the prompt)."""

    @model_validator(mode="after")
    def _evidence_names_fields(self) -> Dimension:
        unknown = [f for f in self.evidence if f not in FIELDS]
        if unknown:
            raise ValueError(f"evidence names unknown blueprint field(s) {', '.join(unknown)}; use {', '.join(FIELDS)}")
        return self

    def rubric_text(self) -> str:
        """The question and every anchor's text and example, as one string (for restating checks)."""
        parts = [self.question]
        for anchor in self.anchors.values():
            parts += [anchor.text, anchor.example or ""]
        return " ".join(parts)


class Dimensions(BaseModel):
    """The scored dimensions; the default six give a maximum total of 30 (docs/stage1.md, "Review")."""

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
