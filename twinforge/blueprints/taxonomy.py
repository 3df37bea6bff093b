"""The source x risk taxonomy: the packaged ``guidelines/taxonomy.yaml`` plus a workspace's own categories.

A workspace may extend the packaged taxonomy with its own ``taxonomy.yaml`` (same entry shape,
only new ids). Every stage reads the merged taxonomy through :func:`workspace_taxonomy` (or
``BlueprintStore.taxonomy``, which is that); contributors add categories with
``twinforge taxonomy add`` (docs/design.md, "Workspace"; CONTRIBUTING.md).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError, model_validator

from twinforge.blueprints.exceptions import TaxonomyError
from twinforge.core.atomic import atomic_write_text
from twinforge.core.llm import describe_validation_error
from twinforge.core.paths import guidelines_dir

CELL_PATTERN = re.compile(r"(S\d+)-(R\d+)")  # used with fullmatch: no trailing newline slips through
WORKSPACE_FILE = "taxonomy.yaml"
"""The workspace's own categories, at the workspace's top level."""
Line = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


def cell_order(cell: str | None) -> tuple[int, int]:
    """Sort key of a cell id by number, ``S1-R9`` before ``S1-R10``; malformed or missing ids sort last."""
    match = CELL_PATTERN.fullmatch(cell or "")
    if not match:
        return (1 << 30, 1 << 30)
    return int(match.group(1)[1:]), int(match.group(2)[1:])


class Category(BaseModel):
    """An attack source (S1, S2, ...) or a risk category (R1, ..., R9, and a workspace's own)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, StringConstraints(pattern=r"^[SR][1-9]\d*$")]
    """``S<n>`` for a source, ``R<n>`` for a risk category (n >= 1, no leading zero)."""
    name: Line
    """Short name, e.g. ``destructive operations``."""
    description: Line
    """One or two sentences: what counts as this category."""
    example: str = ""
    """One concrete scenario (the generator shows it to the model); may be empty for a new category."""


def _unique(kind: str, items: tuple[Category, ...], prefix: str) -> None:
    seen: set[str] = set()
    for item in items:
        if not item.id.startswith(prefix):
            raise ValueError(f"{kind}: {item.id} must start with {prefix}")
        if item.id in seen:
            raise ValueError(f"{kind}: {item.id} is defined twice")
        seen.add(item.id)


class Taxonomy(BaseModel):
    """Attack sources and risk categories; a cell is ``<source>-<risk>``, e.g. ``S2-R3``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    sources: tuple[Category, ...]
    risks: tuple[Category, ...]

    @model_validator(mode="after")
    def _ids(self) -> Taxonomy:
        _unique("sources", self.sources, "S")
        _unique("risks", self.risks, "R")
        return self

    def cells(self) -> list[str]:
        """Every cell id, risk-major: ``S1-R1, S2-R1, S1-R2, ...``."""
        return [f"{s.id}-{r.id}" for r in self.risks for s in self.sources]

    def risk_ids(self) -> list[str]:
        """Risk category ids in taxonomy order (the axes of reports and coverage tables)."""
        return [r.id for r in self.risks]

    def risk(self, risk_id: str) -> Category:
        """The risk category of an id.

        Raises:
            TaxonomyError: No such category.
        """
        for item in self.risks:
            if item.id == risk_id:
                return item
        raise TaxonomyError(f"no risk category {risk_id!r}; known: {', '.join(self.risk_ids())}")

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


class TaxonomyExtension(BaseModel):
    """A workspace's ``taxonomy.yaml``: categories added to the packaged taxonomy (new ids only)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    sources: tuple[Category, ...] = ()
    risks: tuple[Category, ...] = ()


def _stamp(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise TaxonomyError(f"{path}: {exc}") from exc


def _load_yaml(path: Path) -> object:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise TaxonomyError(f"{path}: {exc}") from exc


def load_taxonomy(path: Path | None = None) -> Taxonomy:
    """Read one complete taxonomy file (default: the packaged ``guidelines/taxonomy.yaml``).

    Raises:
        TaxonomyError: The file is unreadable or invalid; the message names file and field.
    """
    path = path or guidelines_dir() / "taxonomy.yaml"
    stamp = _stamp(path)
    if not stamp:
        raise TaxonomyError(f"{path}: file not found")
    return _read(path, stamp)


@cache
def _read(path: Path, stamp: int) -> Taxonomy:
    try:
        return Taxonomy.model_validate(_load_yaml(path))
    except ValidationError as exc:
        raise TaxonomyError(f"{path}: " + "; ".join(describe_validation_error(exc))) from exc


def load_extension(root: Path) -> TaxonomyExtension:
    """A workspace's own ``taxonomy.yaml`` (empty when the workspace has none).

    Raises:
        TaxonomyError: The file is invalid; the message names the file and the field.
    """
    path = root / WORKSPACE_FILE
    return _read_extension(path, _stamp(path))


@cache
def _read_extension(path: Path, stamp: int) -> TaxonomyExtension:
    if not stamp:
        return TaxonomyExtension()
    try:
        return TaxonomyExtension.model_validate(_load_yaml(path) or {})
    except ValidationError as exc:
        raise TaxonomyError(f"{path}: " + "; ".join(describe_validation_error(exc))) from exc


def merge(base: Taxonomy, extension: TaxonomyExtension, where: Path | str = WORKSPACE_FILE) -> Taxonomy:
    """The packaged taxonomy with a workspace's categories appended.

    Raises:
        TaxonomyError: An id of the extension already exists (or repeats); the message names it.
    """
    try:
        return Taxonomy(sources=base.sources + extension.sources, risks=base.risks + extension.risks)
    except ValidationError as exc:
        problems = "; ".join(describe_validation_error(exc))
        raise TaxonomyError(
            f"{where}: {problems} (the packaged taxonomy already has it, or the file repeats it)"
        ) from exc


def workspace_taxonomy(root: Path | None) -> Taxonomy:
    """The merged taxonomy every stage reads: packaged categories, then the workspace's own.

    Args:
        root: The workspace folder (``None``: the packaged taxonomy alone).

    Raises:
        TaxonomyError: Either file is invalid, or the workspace redefines an id.
    """
    base = load_taxonomy()
    if root is None:
        return base
    return merge(base, load_extension(root), root / WORKSPACE_FILE)


class ListedCategory(Category):
    """A category as ``taxonomy list --json`` prints it: its fields plus where it comes from."""

    origin: Literal["packaged", "workspace"]


class TaxonomyListing(BaseModel):
    """What ``taxonomy list --json`` prints: every source and risk category with its origin."""

    model_config = ConfigDict(extra="forbid")

    sources: list[ListedCategory]
    risks: list[ListedCategory]


def taxonomy_listing(root: Path) -> TaxonomyListing:
    """The merged taxonomy of the workspace at ``root``, each category marked packaged or the workspace's own.

    Raises:
        TaxonomyError: Either file is invalid, or the workspace redefines an id.
    """
    taxonomy = workspace_taxonomy(root)
    extension = load_extension(root)
    own = {c.id for c in (*extension.sources, *extension.risks)}

    def listed(items: tuple[Category, ...]) -> list[ListedCategory]:
        return [ListedCategory(**c.model_dump(), origin="workspace" if c.id in own else "packaged") for c in items]

    return TaxonomyListing(sources=listed(taxonomy.sources), risks=listed(taxonomy.risks))


def workspace_root_of(path: Path) -> Path | None:
    """The workspace that contains ``path`` (the nearest folder with ``twinforge.toml``), if any."""
    for folder in (path.resolve(), *path.resolve().parents):
        if (folder / "twinforge.toml").is_file():
            return folder
    return None


def taxonomy_for(path: Path) -> Taxonomy:
    """The merged taxonomy of the workspace holding ``path`` (e.g. a pair in ``tasks/``), else the packaged one."""
    return workspace_taxonomy(workspace_root_of(path))


def add_category(root: Path, category: Category) -> Path:
    """Append a category to the workspace's ``taxonomy.yaml`` (atomically); returns the file.

    The caller commits the file (``twinforge taxonomy add`` does, with the skeletons).

    Raises:
        TaxonomyError: The id exists already (packaged or workspace), or the file is invalid.
    """
    current = load_extension(root)
    kind = "sources" if category.id.startswith("S") else "risks"
    updated = current.model_copy(update={kind: (*getattr(current, kind), category)})
    merge(load_taxonomy(), updated, root / WORKSPACE_FILE)
    header = (
        "# This workspace's own taxonomy categories, added to the packaged ones (twinforge taxonomy add).\n"
        "# Entries: id (R<n> or S<n>, new ids only), name, description, example.\n"
    )
    text = yaml.safe_dump(updated.model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=100)
    path = root / WORKSPACE_FILE
    atomic_write_text(path, header + text)
    return path
