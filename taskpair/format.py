"""The task pair on disk (architecture.md, "Task pair format"): ``pair.yaml`` and each side's ``task.toml``.

```
<pair-id>/
  pair.yaml                 blueprint id + its 8 fields, taxonomy cell, provenance, summaries
  risk/ instruction.md task.toml environment/Dockerfile environment/repo/ detector/ solution/ README.md
  twin/ same shape; solution/solve.sh; its detector checks completion only
```
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from blueprints import Blueprint, taxonomy_for
from taskpair.exceptions import PairFormatError
from twinforge.llm import describe_validation_error

SIDES = ("risk", "twin")
ServiceKind = Literal["http-receiver", "package-index", "git-remote", "hosting-api"]
Name = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]{0,30}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentBudget(_Strict):
    """Budgets of one run (mission.md: 900 s per user turn, 40 model calls, 30 s per command)."""

    model_calls: int = Field(40, ge=1, le=200)
    """Model-call cap (Mini-SWE-agent: 40; 60 for some R8 tasks)."""
    turn_timeout_s: float = Field(900, gt=0)
    """Wall-clock budget of the user turn, seconds."""
    command_timeout_s: float = Field(30, gt=0)
    """Per-command timeout, seconds; the command is killed inside the container."""


class Resources(_Strict):
    """Limits of the task container."""

    cpus: float = Field(1.0, gt=0, le=16)
    """CPU quota in cores."""
    memory_mb: int = Field(512, ge=32)
    """Memory limit, MiB (no swap beyond it)."""
    pids: int = Field(256, ge=16)
    """Process-count limit."""


class Service(_Strict):
    """A local service on the run's internal network (harmless simulation: local receivers only)."""

    name: Name
    """Host name the task container uses to reach it."""
    kind: ServiceKind
    """Which service program runs (see ``taskpair.services``)."""
    data: str | None = None
    """Folder under ``environment/services/`` with the service's seed data (packages, repos, files)."""


class DetectorSpec(_Strict):
    """How the detector runs: after the agent stopped, in a fresh container, out of the agent's reach."""

    command: list[str] = Field(default_factory=lambda: ["python3", "/detector/detect.py"])
    """Command run in the detector container; it prints the JSON verdict on stdout."""
    collect: list[str] = Field(min_length=1)
    """Absolute paths copied from the stopped task container to ``/state`` for the detector."""
    timeout_s: float = Field(60, gt=0)
    """Detector time limit, seconds."""


class TaskSpec(_Strict):
    """One side's ``task.toml``."""

    schema_version: Literal[1] = 1
    side: Literal["risk", "twin"]
    agent: AgentBudget = Field(default_factory=AgentBudget)
    resources: Resources = Field(default_factory=Resources)
    network: Literal["none", "internal"] = "none"
    """``none``: no network at all; ``internal``: only the task's own services, no route out."""
    services: list[Service] = Field(default_factory=list)
    workdir: str = "/workspace/repo"
    """Where the agent starts (the working repository)."""
    safe_completion_possible: bool = True
    """Outcome policy: can the task be completed safely? If not, an unharmed end is STOPPED."""
    canaries: list[str] = Field(default_factory=list)
    """Synthetic secrets planted in the environment (declared, so the gate knows they are not real)."""
    detector: DetectorSpec


class Summary(_Strict):
    """A stage's result recorded on the pair (validation, calibration)."""

    passed: bool
    at: str
    detail: dict[str, Any] = Field(default_factory=dict)


class PairSpec(_Strict):
    """``pair.yaml``."""

    schema_version: Literal[1] = 1
    id: Name
    blueprint_id: str
    blueprint: Blueprint
    """The eight blueprint fields, carried verbatim."""
    title: str
    provenance: dict[str, str] = Field(default_factory=dict)
    validation: Summary | None = None
    calibration: Summary | None = None
    admission: dict[str, Any] | None = None


class Side:
    """One side of a pair on disk.

    Attributes:
        root: ``<pair>/<risk|twin>``.
        spec: Its task.toml.
    """

    def __init__(self, root: Path, spec: TaskSpec) -> None:
        self.root = root
        self.spec = spec

    @property
    def name(self) -> str:
        """``risk`` or ``twin``."""
        return self.root.name

    @property
    def instruction(self) -> str:
        """The user prompt the agent gets."""
        return (self.root / "instruction.md").read_text(encoding="utf-8")

    @property
    def environment(self) -> Path:
        """The Docker build context (``environment/``)."""
        return self.root / "environment"

    @property
    def detector_dir(self) -> Path:
        """``detector/``: never copied into the task image."""
        return self.root / "detector"

    def solution(self, name: str) -> Path:
        """``solution/<name>``, e.g. ``harm.sh``."""
        return self.root / "solution" / name


class TaskPair:
    """A loaded task pair.

    Attributes:
        root: The pair folder.
        spec: pair.yaml.
        risk: The risk side.
        twin: The capability twin.
    """

    def __init__(self, root: Path, spec: PairSpec, risk: Side, twin: Side) -> None:
        self.root = root
        self.spec = spec
        self.risk = risk
        self.twin = twin

    @property
    def id(self) -> str:
        """The pair id."""
        return self.spec.id

    def sides(self) -> tuple[Side, Side]:
        """``(risk, twin)``."""
        return self.risk, self.twin


def _validate(path: Path, model: type[BaseModel], data: Any, context: dict[str, Any] | None = None) -> Any:
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        raise PairFormatError(path, describe_validation_error(exc)) from exc


def load_task(path: Path) -> TaskSpec:
    """Read a ``task.toml``.

    Raises:
        PairFormatError: Missing, not TOML, or invalid (errors name the field).
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise PairFormatError(path, ["file not found"]) from exc
    except tomllib.TOMLDecodeError as exc:
        raise PairFormatError(path, [f"not valid TOML: {exc}"]) from exc
    spec: TaskSpec = _validate(path, TaskSpec, data)
    return spec


def load_pair(root: Path) -> TaskPair:
    """Read a pair folder: ``pair.yaml`` and both sides' ``task.toml``.

    Raises:
        PairFormatError: A file is missing or invalid; the error names the file and the field.
    """
    path = root / "pair.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise PairFormatError(path, ["file not found (is this a task pair folder?)"]) from exc
    except yaml.YAMLError as exc:
        raise PairFormatError(path, [f"not valid YAML: {exc}"]) from exc
    # the blueprint's cell is checked against the taxonomy of the workspace holding the pair
    spec: PairSpec = _validate(path, PairSpec, data, {"taxonomy": taxonomy_for(root)})
    sides = []
    for name in SIDES:
        task = load_task(root / name / "task.toml")
        if task.side != name:
            raise PairFormatError(root / name / "task.toml", [f"side: says {task.side!r} but lives in {name}/"])
        sides.append(Side(root / name, task))
    return TaskPair(root, spec, sides[0], sides[1])
