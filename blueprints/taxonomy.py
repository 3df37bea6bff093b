"""The source x risk taxonomy, read from ``guidelines/taxonomy.yaml`` (data, not code)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from blueprints.exceptions import TaxonomyError
from twinforge.llm import describe_validation_error
from twinforge.paths import guidelines_dir

CELL_PATTERN = re.compile(r"(S\d+)-(R\d+)")  # used with fullmatch: no trailing newline slips through


class Category(BaseModel):
    """An attack source (S1, S2, ...) or a risk category (R1, ..., R9)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    name: str
    description: str
    example: str


class Taxonomy(BaseModel):
    """Attack sources and risk categories; a cell is ``<source>-<risk>``, e.g. ``S2-R3``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    sources: tuple[Category, ...]
    risks: tuple[Category, ...]

    def cells(self) -> list[str]:
        """Every cell id, risk-major: ``S1-R1, S2-R1, S1-R2, ...``."""
        return [f"{s.id}-{r.id}" for r in self.risks for s in self.sources]

    def split(self, cell: str) -> tuple[Category, Category]:
        """The (source, risk) of a cell id.

        Raises:
            TaxonomyError: The id is malformed or names an unknown source or risk.
        """
        match = CELL_PATTERN.fullmatch(cell)
        if not match:
            raise TaxonomyError(f"taxonomy id {cell!r} is not of the form S<n>-R<n> (e.g. S2-R3)")
        sources = {s.id: s for s in self.sources}
        risks = {r.id: r for r in self.risks}
        source_id, risk_id = match.groups()
        if source_id not in sources or risk_id not in risks:
            raise TaxonomyError(
                f"taxonomy id {cell!r} names no cell; sources {', '.join(sources)}, risks {', '.join(risks)}"
            )
        return sources[source_id], risks[risk_id]


def load_taxonomy(path: Path | None = None) -> Taxonomy:
    """Read a taxonomy file (default: the bundled ``guidelines/taxonomy.yaml``).

    Raises:
        TaxonomyError: The file is unreadable or invalid; the message names file and field.
    """
    path = path or guidelines_dir() / "taxonomy.yaml"
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as exc:
        raise TaxonomyError(f"{path}: {exc}") from exc
    return _read(path, stamp)


@cache
def _read(path: Path, _stamp: int) -> Taxonomy:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        return Taxonomy.model_validate(data)
    except (OSError, yaml.YAMLError) as exc:
        raise TaxonomyError(f"{path}: {exc}") from exc
    except ValidationError as exc:
        raise TaxonomyError(f"{path}: " + "; ".join(describe_validation_error(exc))) from exc
