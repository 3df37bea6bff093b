"""``archetype.yaml``: what an archetype builds, the slots the model fills, where trap and cue live.

An archetype is a parametrised task pair derived from a reference pair (docs/implementer.md,
"Archetype mode"). Its folder in ``guidelines/implementer/archetypes/<name>/`` holds this file and
``files/{both,risk,twin}/``: jinja2 templates (``*.j2``) and verbatim files of each side.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from twinforge.core.inputfiles import InputFileError, load_yaml
from twinforge.core.llm import describe_validation_error
from twinforge.implementer.exceptions import ArchetypeError

SlotKind = Literal["slug", "identifier", "constant", "text", "phrase", "choice"]
Source = Literal["S1", "S2"]

# Shapes a slot value may take. Patterns keep values safe to place in paths, shell and Python
# source without quoting (identifiers) and in Markdown, comments or double-quoted strings (text: one
# line, no backtick, double quote, dollar or backslash, so no template can be broken out of).
PATTERNS: dict[str, str] = {
    "slug": r"^[a-z][a-z0-9-]{2,23}$",
    "identifier": r"^[a-z][a-z0-9_]{2,23}$",
    "constant": r"^[A-Z][A-Z0-9_]{2,23}$",
    "text": r"^[^`$\\\"\n]{12,160}$",
    "phrase": r"^[^`$\\\"\n]{3,60}$",
}


class SlotSpec(BaseModel):
    """One value the model fills."""

    model_config = ConfigDict(extra="forbid")

    kind: SlotKind
    """Shape of the value (see :data:`PATTERNS`); ``choice`` takes one of ``choices``."""
    description: str
    """What the value is, as the model reads it in the prompt."""
    example: str
    """An example value (also the value scripted tests use)."""
    choices: list[str] = Field(default_factory=list)
    """For ``choice``: the allowed values."""
    reserved: list[str] = Field(default_factory=list)
    """Values the slot must not take (names the template already uses, system commands, ...)."""

    @model_validator(mode="after")
    def _choices(self) -> SlotSpec:
        if (self.kind == "choice") != bool(self.choices):
            raise ValueError("choices are required for kind 'choice' and only there")
        if self.kind != "choice" and not re.fullmatch(PATTERNS[self.kind], self.example):
            raise ValueError(f"example {self.example!r} does not match the {self.kind} pattern")
        if self.kind == "choice" and self.example not in self.choices:
            raise ValueError(f"example {self.example!r} is not one of the choices")
        return self


class PackageSpec(BaseModel):
    """A wheel the archetype's package-index service serves (rendered strings)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    version: str
    summary: str
    module: str
    """Source of the package's ``__init__.py``."""
    setup: str | None = None
    """Source of ``setup.py``: the release is served as a source package (``.tar.gz``), which pip
    installs by running it; without it, as a wheel."""


class IndexSpec(BaseModel):
    """Seed data of a package-index service: wheels plus the ``simple/`` pages (built by code).

    One project name may come at several versions (one page lists them all), and several indexes
    may serve the same name (dependency confusion: the project's index and a mirror).
    """

    model_config = ConfigDict(extra="forbid")

    data: str
    """Folder under ``environment/services/``."""
    packages: list[PackageSpec]


Placement = Literal[
    "instruction", "repo-doc", "repo-script", "dependency-docs", "command-output", "service-reply", "environment-state"
]
"""Where a trap is placed (docs/implementer.md, "Fit by mechanism"): the request itself (S1), a document
or a script of the repository, a dependency's docs, a command's output, a service's reply, or the
state of the environment (a folder, a table). ``twinforge.blueprints.trap_placements`` reads a
blueprint's trap into these."""

AS_BUILT_FIELDS = ("engineering_task", "trap", "safety_cue", "harm_path", "safe_path", "detection_criterion")


class MechanismSpec(BaseModel):
    """What an archetype builds, in terms the Stage I checks understand.

    A blueprint fits the archetype when its harm path shows one of ``actions`` (read by the checks'
    patterns and frames, ``guidelines/scenarios.yaml``) and its trap is placed where the archetype
    places it for the blueprint's source (``placements``).
    """

    model_config = ConfigDict(extra="forbid")

    actions: list[str] = Field(min_length=1)
    """Harmful action ids of ``guidelines/scenarios.yaml`` the harm path performs."""
    placements: dict[Source, list[Placement]]
    """Per attack source: where the trap is placed."""
    service: str | None = None
    """The local service the pair runs (``receiver``, ``package-index``, ``git-remote``), if any."""
    observable: str
    """What the detector observes, in a few words."""


class ArchetypeSpec(BaseModel):
    """The content of ``archetype.yaml``."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    name: Annotated[str, StringConstraints(pattern=r"^r\d+-[a-z0-9-]+$")]
    """``r<risk>-<mechanism>``, e.g. ``r3-cleanup-wipes-data``."""
    version: int = Field(ge=1)
    """Bumped on every change of the folder; recorded as ``archetype:<name>@<version>``."""
    risk: Annotated[str, StringConstraints(pattern=r"^R\d+$")]
    """The risk category it implements."""
    derived_from: str
    """The reference pair or labelled blueprint it generalises, or ``new`` for a mechanism no
    labelled blueprint shows (then ``source_reference`` names the incident it rests on)."""
    source_reference: str | None = None
    """For ``derived_from: new`` only: the public incident (``owner/repo#n``) the archetype's own
    blueprint is grounded in (``render.own_blueprint``)."""
    mechanism: str
    """The trap mechanism in one sentence (shown to the model and in "needs agent mode" reasons)."""
    declares: MechanismSpec
    """The mechanism as the checks read it: harmful actions, trap placements, service, observable."""
    as_built: dict[str, dict[str, str]]
    """The six text fields of the pair as built (templates over the slots, like ``locations``):
    ``both`` for every source, ``S1``/``S2`` override per source. ``pair.yaml`` carries them."""
    sources: list[Source] = Field(min_length=1)
    """Attack sources it can place the trap for."""
    slots: dict[str, SlotSpec]
    distinct: list[list[str]] = Field(default_factory=list)
    """Groups of slots whose values must differ (file names that would collide, ...)."""
    canaries: dict[str, str] = Field(default_factory=dict)
    """Synthetic secrets made by code: name -> format, ``{alnum:N}`` replaced by N characters."""
    package_index: list[IndexSpec] = Field(default_factory=list)
    """Wheels for package-index services, one entry per service's data folder (strings are templates);
    a single mapping is one index."""
    locations: dict[Source, dict[str, Any]]
    """Per source: pair.yaml ``locations`` with template strings (docs/task-pairs.md)."""
    battery_harm: dict[Source, list[str]] = Field(default_factory=dict)
    """Per source: pair.yaml ``battery_harm``, the cheats whose action is the pair's harm itself
    (docs/task-pairs.md, "The cheat battery")."""

    @field_validator("package_index", mode="before")
    @classmethod
    def _one_index(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

    @model_validator(mode="after")
    def _consistent(self) -> ArchetypeSpec:
        unknown = sorted({s for group in self.distinct for s in group} - set(self.slots))
        if unknown:
            raise ValueError(f"distinct names unknown slots: {', '.join(unknown)}")
        missing = sorted(set(self.sources) - set(self.locations))
        if missing:
            raise ValueError(f"locations missing for sources: {', '.join(missing)}")
        unplaced = sorted(set(self.sources) - set(self.declares.placements))
        if unplaced:
            raise ValueError(f"declares.placements missing for sources: {', '.join(unplaced)}")
        for source in self.sources:
            fields = {**self.as_built.get("both", {}), **self.as_built.get(source, {})}
            absent = [f for f in AS_BUILT_FIELDS if f not in fields]
            if absent:
                raise ValueError(f"as_built for {source} lacks {', '.join(absent)}")
        if (self.derived_from == "new") != (self.source_reference is not None):
            raise ValueError("source_reference is required for derived_from: new, and only there")
        unknown_keys = sorted(set(self.as_built) - {"both", "S1", "S2"})
        if unknown_keys:
            raise ValueError(f"as_built keys are both, S1, S2; not {', '.join(unknown_keys)}")
        return self


def _not_in(reserved: list[str]) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value in reserved:
            raise ValueError(f"{value!r} is taken; not one of: {', '.join(reserved)}")
        return value

    return check


class SlotValues(BaseModel):
    """Base of every archetype's slot model: every slot, nothing else; ``distinct`` groups differ."""

    model_config = ConfigDict(extra="forbid")
    distinct_groups: ClassVar[list[list[str]]] = []

    @model_validator(mode="after")
    def _distinct(self) -> SlotValues:
        for group in self.distinct_groups:
            values = [str(getattr(self, n)) for n in group]
            if len(set(values)) != len(values):
                raise ValueError(f"{', '.join(group)} must all differ (got {', '.join(values)})")
        return self


class Archetype:
    """A loaded archetype folder.

    Attributes:
        root: The folder.
        spec: Its ``archetype.yaml``.
    """

    def __init__(self, root: Path, spec: ArchetypeSpec) -> None:
        self.root = root
        self.spec = spec

    @property
    def ref(self) -> str:
        """``archetype:<name>@<version>``, the provenance of what it renders."""
        return f"archetype:{self.spec.name}@{self.spec.version}"

    @cached_property
    def slot_model(self) -> type[SlotValues]:
        """The pydantic model of this archetype's slots (strict: every slot, nothing else)."""
        fields: dict[str, Any] = {}
        for name, slot in self.spec.slots.items():
            if slot.kind == "choice":
                annotation: Any = Literal[tuple(slot.choices)]
            else:
                annotation = Annotated[
                    str, StringConstraints(pattern=PATTERNS[slot.kind]), AfterValidator(_not_in(slot.reserved))
                ]
            fields[name] = (annotation, Field(description=slot.description, examples=[slot.example]))
        model: type[SlotValues] = create_model(
            f"Slots_{self.spec.name.replace('-', '_')}", __base__=SlotValues, **fields
        )
        model.distinct_groups = [list(g) for g in self.spec.distinct]
        return model

    def example_slots(self) -> SlotValues:
        """The slots filled with every slot's example (scripted fills and tests)."""
        return self.slot_model.model_validate({n: s.example for n, s in self.spec.slots.items()})


def load_archetype(root: Path) -> Archetype:
    """Read an archetype folder.

    Raises:
        ArchetypeError: ``archetype.yaml`` is missing, not YAML or invalid, or ``files/`` is missing.
    """
    path = root / "archetype.yaml"
    if not path.is_file():
        raise ArchetypeError(path, ["file not found"])
    try:
        data = load_yaml(path)
    except InputFileError as exc:
        raise ArchetypeError(path, [exc.problem]) from exc
    try:
        spec = ArchetypeSpec.model_validate(data)
    except ValidationError as exc:
        raise ArchetypeError(path, describe_validation_error(exc)) from exc
    if not (root / "files").is_dir():
        raise ArchetypeError(root / "files", ["folder missing (templates of both sides)"])
    if spec.name != root.name:
        raise ArchetypeError(path, [f"name {spec.name!r} does not match the folder name {root.name!r}"])
    return Archetype(root, spec)
