"""Incident sources that ground generated blueprints (``--sources FILE`` or the bundled corpus).

A list is validated as a whole before any model call (docs/stage1.md): every entry's ref must
be ``owner/repo#number`` or a URL, its risk (and related risks) must exist in the taxonomy, its
source must be ``S1``, ``S2`` or ``unknown``; the error names every bad entry.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError, field_validator

from twinforge.blueprints import Taxonomy
from twinforge.core.inputfiles import InputFileError, load_yaml
from twinforge.core.llm import describe_validation_error
from twinforge.core.paths import guidelines_dir
from twinforge.generator.exceptions import SourcesError

ISSUE_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+#[1-9][0-9]*")
URL_REF = re.compile(r"https?://[^\s/]+\.[^\s/]+(?:/\S*)?")
BARE_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+")
BUNDLED_LABEL = "bundled:guidelines/sources/incidents.yaml"
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=10)]


class Incident(BaseModel):
    """One public incident; the shape of ``guidelines/sources/incidents.yaml``.

    Attributes:
        ref: Public issue id (``owner/repo#n``) or a URL, cited verbatim as ``source_reference``.
        risk: Risk category id (must exist in the taxonomy).
        source: ``S1``, ``S2`` or ``unknown``.
        summary: What happened, in our own words.
        evidence: What a detector could measure in a simulated environment.
        related: Further risk categories it touches (optional).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    ref: str
    risk: str
    source: Literal["S1", "S2", "unknown"]
    summary: Text
    evidence: Text
    related: tuple[str, ...] = ()

    @field_validator("ref", mode="before")
    @classmethod
    def _ref_shape(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        ref = value.strip()
        if ISSUE_REF.fullmatch(ref) or URL_REF.fullmatch(ref):
            return ref
        hint = ""
        if BARE_REPO.fullmatch(ref):
            hint = " (no issue number: in YAML a ' #' after a space starts a comment, so write owner/repo#123)"
        raise ValueError(f"must be owner/repo#number or a URL, got {ref!r}{hint}")

    def touches(self, risk: str) -> bool:
        """True when the incident is about ``risk`` (primary or related)."""
        return self.risk == risk or risk in self.related


def default_sources() -> Path:
    """The bundled corpus, ``guidelines/sources/incidents.yaml``."""
    return guidelines_dir() / "sources" / "incidents.yaml"


def sources_label(path: Path, workspace_root: Path) -> str:
    """How provenance names an incident list, independent of the folder the command ran in.

    ``bundled:...`` for the bundled corpus, the path relative to the workspace for a list inside
    it, else ``<file name> (outside the workspace)``; the digest is recorded beside it.
    """
    resolved = path.resolve()
    if resolved == default_sources().resolve():
        return BUNDLED_LABEL
    try:
        return resolved.relative_to(workspace_root.resolve()).as_posix()
    except ValueError:
        return f"{path.name} (outside the workspace)"


def sources_digest(path: Path) -> str:
    """``sha256:<hex>`` of the list's bytes.

    Raises:
        SourcesError: The file cannot be read.
    """
    try:
        return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise SourcesError(f"{path}: {exc}") from exc


def _entry_label(i: int, entry: Any) -> str:
    ref = entry.get("ref") if isinstance(entry, dict) else None
    return f"entry {i}" + (f" (ref {str(ref)!r})" if ref is not None else "")


def load_sources(path: Path, taxonomy: Taxonomy | None = None) -> list[Incident]:
    """Read and validate an incident list; every bad entry is reported at once.

    Args:
        path: The YAML list.
        taxonomy: Risks an entry may name (default: the bundled taxonomy).

    Raises:
        SourcesError: Unreadable, not a YAML list, or bad entries (each named by index and ref,
            with every problem: ref shape, unknown risk, unknown source, missing fields), or a
            duplicated ref.
    """
    if taxonomy is None:
        from twinforge.blueprints import load_taxonomy

        taxonomy = load_taxonomy()
    try:
        data = load_yaml(path)
    except InputFileError as exc:
        raise SourcesError(str(exc)) from exc
    if not isinstance(data, list) or not data:
        raise SourcesError(f"{path}: expected a non-empty YAML list of incidents")
    risks = [r.id for r in taxonomy.risks]
    incidents: list[Incident] = []
    problems: list[str] = []
    for i, entry in enumerate(data):
        errors: list[str] = []
        try:
            incident = Incident.model_validate(entry)
        except ValidationError as exc:
            errors += describe_validation_error(exc)
            incident = None
        if isinstance(entry, dict):
            named = [entry.get("risk"), *list(entry.get("related") or [])]
            unknown = [str(r) for r in named if r is not None and str(r) not in risks]
            if unknown:
                errors.append(f"risk {', '.join(unknown)} not in the taxonomy ({', '.join(risks)})")
        if errors:
            problems.append(f"{_entry_label(i, entry)}: " + "; ".join(errors))
        elif incident is not None:
            incidents.append(incident)
    refs = [x.ref for x in incidents]
    duplicated = sorted({r for r in refs if refs.count(r) > 1})
    if duplicated:
        problems.append(f"duplicated refs: {', '.join(duplicated)}")
    if problems:
        raise SourcesError(
            f"{path}: {len(problems)} problem(s); no model was called:\n  " + "\n  ".join(problems),
            problems=problems,
        )
    return incidents


def cell_counts(incidents: list[Incident], taxonomy: Taxonomy) -> dict[str, int]:
    """Cell -> incidents that can ground it: touching its risk, of its source or of unknown source."""
    counts = {}
    for cell in taxonomy.cells():
        source, risk = cell.split("-")
        counts[cell] = sum(1 for x in incidents if x.touches(risk) and x.source in (source, "unknown"))
    return counts


def thin_cells(incidents: list[Incident], taxonomy: Taxonomy, minimum: int = 10) -> dict[str, int]:
    """Cells with fewer than ``minimum`` grounding incidents (item 6: ten), with counts."""
    return {cell: n for cell, n in cell_counts(incidents, taxonomy).items() if n < minimum}
