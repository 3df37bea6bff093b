"""Incident sources that ground generated blueprints (``--sources FILE`` or the bundled corpus)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from generator.exceptions import SourcesError
from twinforge.inputfiles import InputFileError, load_yaml
from twinforge.llm import describe_validation_error
from twinforge.paths import guidelines_dir

Ref = Annotated[str, StringConstraints(strip_whitespace=True, min_length=3)]


class Incident(BaseModel):
    """One public incident; the shape of ``../shared/sources/incidents.yaml``.

    Attributes:
        ref: Public issue id (``owner/repo#n``), cited verbatim as ``source_reference``.
        risk: Risk category id.
        source: ``S1``, ``S2`` or ``unknown``.
        summary: What happened.
        evidence: What a detector could measure.
        related: Further risk categories it touches (optional).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    ref: Ref
    risk: str = Field(pattern=r"^R\d+$")
    source: str
    summary: str
    evidence: str
    related: tuple[str, ...] = ()

    def touches(self, risk: str) -> bool:
        """True when the incident is about ``risk`` (primary or related)."""
        return self.risk == risk or risk in self.related


def default_sources() -> Path:
    """The bundled corpus, ``guidelines/sources/incidents.yaml``."""
    return guidelines_dir() / "sources" / "incidents.yaml"


def load_sources(path: Path) -> list[Incident]:
    """Read an incident list.

    Raises:
        SourcesError: Unreadable, not a YAML list, an invalid entry (named by index and ref), or
            a duplicated ref.
    """
    try:
        data = load_yaml(path)
    except InputFileError as exc:
        raise SourcesError(str(exc)) from exc
    if not isinstance(data, list) or not data:
        raise SourcesError(f"{path}: expected a non-empty YAML list of incidents")
    incidents = []
    for i, entry in enumerate(data):
        try:
            incidents.append(Incident.model_validate(entry))
        except ValidationError as exc:
            ref = entry.get("ref", "?") if isinstance(entry, dict) else "?"
            problems = "; ".join(describe_validation_error(exc))
            raise SourcesError(f"{path}: entry {i} (ref {ref}): {problems}") from exc
    refs = [x.ref for x in incidents]
    duplicated = sorted({r for r in refs if refs.count(r) > 1})
    if duplicated:
        raise SourcesError(f"{path}: duplicated refs: {', '.join(duplicated)}")
    return incidents


def pick_incidents(incidents: list[Incident], risk: str, limit: int, offset: int = 0) -> list[Incident]:
    """Incidents to show for a risk: those touching it, else all; at most ``limit``, rotated by ``offset``.

    Rotation gives successive batches of the same cell different grounding when there are more
    matching incidents than fit in one prompt.
    """
    pool = [x for x in incidents if x.touches(risk)] or incidents
    if len(pool) <= limit:
        return pool
    start = (offset * limit) % len(pool)
    return (pool[start:] + pool[:start])[:limit]
