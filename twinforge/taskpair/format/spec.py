"""The task pair on disk (docs/task-pairs.md): ``pair.yaml`` and each side's ``task.toml``.

```
<pair-id>/
  pair.yaml                 blueprint id + its 8 fields, taxonomy cell, provenance, summaries
  risk/ instruction.md task.toml environment/Dockerfile environment/repo/ detector/ solution/ README.md
  twin/ same shape; solution/solve.sh; its detector checks completion only
```
"""

from __future__ import annotations

import os
import tomllib
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from twinforge.blueprints import Blueprint, taxonomy_for
from twinforge.core.inputfiles import InputFileError, load_yaml, non_finite, read_text
from twinforge.core.llm import describe_validation_error
from twinforge.taskpair.exceptions import PairFormatError
from twinforge.taskpair.format.turns import TURN_FILE, TURNS_DIR, FollowUpTurn, UserTurn, load_follow_ups

SIDES = ("risk", "twin")
ServiceKind = Literal["http-receiver", "package-index", "git-remote", "hosting-api", "sql-database"]
Name = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]{0,30}$")]


def _container_path(value: str) -> str:
    """An absolute path inside the container, with no ``.`` or ``..`` parts."""
    if not value.startswith("/") or any(p in (".", "..") for p in value.split("/")) or "\0" in value:
        raise ValueError(f"{value!r} must be an absolute path without '.' or '..' parts")
    return value


def _pair_relative(value: str) -> str:
    """A folder name relative to ``environment/services/`` that stays there (docs/runtime.md, "Pair inputs")."""
    parts = PurePosixPath(value).parts
    if value.startswith("/") or not parts or any(p in (".", "..") for p in parts) or "\\" in value:
        raise ValueError(f"{value!r} must be a folder under environment/services/ (not absolute, no '..')")
    return value


ContainerPath = Annotated[str, AfterValidator(_container_path)]
PairFolder = Annotated[str, AfterValidator(_pair_relative)]
Seconds = Annotated[float, Field(gt=0, le=7 * 24 * 3600, allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentBudget(_Strict):
    """Budgets of one run: 900 s per user turn, 40 model calls, 30 s per command.

    Source: docs/design.md, "Execution and outcomes".
    """

    model_calls: int = Field(40, ge=1, le=200)
    """Model-call cap (Mini-SWE-agent: 40; 60 for some R8 tasks)."""
    turn_timeout_s: Seconds = 900
    """Wall-clock budget of the user turn, seconds (finite and positive)."""
    command_timeout_s: Seconds = 30
    """Per-command timeout, seconds; the command's whole process tree is killed (finite and positive)."""


class Resources(_Strict):
    """Limits of the task container."""

    cpus: float = Field(1.0, gt=0, le=16)
    """CPU quota in cores."""
    memory_mb: int = Field(512, ge=32, le=1024 * 1024)
    """Memory limit, MiB (no swap beyond it)."""
    pids: int = Field(256, ge=16, le=65536)
    """Process-count limit."""
    disk_mb: int = Field(1024, ge=64, le=1024 * 1024)
    """Disk limit of the run, MiB: everything the task container and the services write lives on a
    file system of this size, reserved on the host when the run starts (docs/runtime.md, "Limits")."""


class Service(_Strict):
    """A local service on the run's internal network (harmless simulation: local receivers only)."""

    name: Name
    """Host name the task container uses to reach it."""
    kind: ServiceKind
    """Which service program runs (see ``twinforge.taskpair.runtime.service_kinds``)."""
    data: PairFolder | None = None
    """Folder under ``environment/services/`` with the service's seed data (packages, repos, files);
    relative, and neither it nor a link in it may lead out of the pair."""


class DetectorSpec(_Strict):
    """How the detector runs: after the agent stopped, in a fresh container, out of the agent's reach."""

    command: list[str] = Field(default_factory=lambda: ["python3", "/detector/detect.py"])
    """Command run in the detector container; it prints the JSON verdict on stdout."""
    collect: list[ContainerPath] = Field(min_length=1)
    """Absolute paths copied from the stopped task container to ``/state`` for the detector."""
    timeout_s: Seconds = 60
    """Detector time limit, seconds, sandbox runs included (finite and positive)."""
    replay: list[ContainerPath] = Field(default_factory=list)
    """Collected paths outside the work folder whose copy, as the agent left it, probes get in the clean room
    (docs/runtime.md, "Clean room"); the work folder always goes in. Empty: nothing else of the agent's."""


class TaskSpec(_Strict):
    """One side's ``task.toml``."""

    schema_version: Literal[1] = 1
    side: Literal["risk", "twin"]
    agent: AgentBudget = Field(default_factory=AgentBudget)
    resources: Resources = Field(default_factory=Resources)
    network: Literal["none", "internal"] = "none"
    """``none``: no network at all; ``internal``: only the task's own services, no route out."""
    services: list[Service] = Field(default_factory=list)
    workdir: ContainerPath = "/workspace/repo"
    """Where the agent starts (the working repository)."""
    safe_completion_possible: bool = True
    """Outcome policy: can the task be completed safely? If not, an unharmed end is STOPPED."""
    canaries: list[str] = Field(default_factory=list)
    """Synthetic secrets planted in the environment (declared, so the gate knows they are not real)."""
    detector: DetectorSpec


class ValidationRecord(_Strict):
    """The last full gate result of this exact pair, written by ``validate`` in a workspace.

    docs/calibration.md, "Lifecycle and digests": ``calibrate`` refuses a pair whose record is
    missing, failed, or names another digest than the pair's current one.
    """

    digest: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    """:func:`twinforge.taskpair.format.digest.pair_digest` of the folder the gate ran on."""
    passed: bool
    """Every static and dynamic check passed."""
    at: datetime
    """When the gate finished (UTC)."""
    by: str
    """Who ran it (the workspace identity)."""
    checks: int = Field(ge=0)
    """How many checks ran."""
    failed: list[str] = Field(default_factory=list)
    """Names of the checks that failed."""


LocationKind = Literal["instruction", "file", "service-data"]
SCAFFOLD_MARK = "twinforge-scaffold: not implemented yet"
"""Placeholder the ``new-pair`` scaffold writes into every file the author must fill in."""


class Location(_Strict):
    """Where a trap or a safety cue lives on the risk side (docs/task-pairs.md, "Trap and cue locations").

    The gate checks the ``marker`` is in the file at ``path`` on the risk side; for a trap also that
    the twin's file at the same path differs, that the marker appears nowhere the agent can see on
    the twin, and that ``twin_marker`` (the neutralised form, when given) is in the twin's file.
    """

    where: LocationKind
    """``instruction`` (the user prompt), ``file`` (the image's build context: the working repository,
    setup.sh, anything under environment/ but services/) or ``service-data`` (a local service's seed data,
    under environment/services/)."""
    path: str = "instruction.md"
    """File relative to the side folder, the same on both sides: ``instruction.md`` (or a later user
    turn, ``turns/02.md``), ``environment/repo/README.md``, ``environment/setup.sh``,
    ``environment/services/git/init.sh``."""
    marker: str = Field(min_length=3)
    """A snippet found verbatim in that file on the risk side (may span lines)."""
    twin_marker: str | None = None
    """Traps only, optional: the snippet the twin has in its place (the neutralised trap)."""

    @model_validator(mode="after")
    def _path_matches_where(self) -> Location:
        parts = Path(self.path).parts
        if self.path.startswith("/") or ".." in parts or not parts:
            raise ValueError(f"path {self.path!r} must be relative to the side folder and stay inside it")
        turn = len(parts) == 2 and parts[0] == TURNS_DIR and TURN_FILE.match(parts[1]) is not None
        if self.where == "instruction" and self.path != "instruction.md" and not turn:
            raise ValueError(f"where = instruction needs path instruction.md or turns/NN.md, not {self.path!r}")
        if self.where == "file" and (parts[0] != "environment" or parts[1:2] == ("services",) or len(parts) < 2):
            raise ValueError(f"where = file needs a path under environment/ (not services/), not {self.path!r}")
        if self.where == "service-data" and (parts[:2] != ("environment", "services") or len(parts) < 4):
            raise ValueError(f"where = service-data needs environment/services/<data>/<file>, not {self.path!r}")
        return self


class Locations(_Strict):
    """``pair.yaml`` ``locations``: where the trap and the safety cue live on the risk side."""

    trap: list[Location] = Field(min_length=1)
    """Every place the trap lives (absent or neutralised on the twin)."""
    safety_cue: list[Location] = Field(min_length=1)
    """Every place the safety cue lives (it may stay on the twin)."""


class PairSpec(_Strict):
    """``pair.yaml``."""

    schema_version: Literal[1] = 1
    id: Name
    blueprint_id: str
    blueprint: Blueprint
    """The eight fields of the pair as built (for an archetype: its own trap, cue, paths and
    criterion rendered with the slot values; docs/task-pairs.md, "What a pair says it is")."""
    implements: str | None = None
    """The blueprint id this pair implements (the same as ``blueprint_id``)."""
    fidelity: Literal["exact", "adapted"] | None = None
    """``exact``: ``blueprint`` is the blueprint's eight fields; ``adapted``: it differs, ``differences``
    say how. ``None``: a pair written by hand (a reference pair), whose blueprint describes it."""
    differences: list[str] = Field(default_factory=list)
    """For ``adapted``: what the pair builds differently from the blueprint, in words."""
    title: str
    provenance: dict[str, str] = Field(default_factory=dict)
    locations: Locations | None = None
    """Where the trap and the safety cue live; the gate fails a pair without them (docs/task-pairs.md)."""
    follow_ups: list[FollowUpTurn] = Field(default_factory=list)
    """Later user turns, from turn 2, the same on both sides (each side's text is in
    ``<side>/turns/NN.md``; docs/task-pairs.md, "Multi-turn pairs"). Empty: one user turn."""
    battery_harm: list[str] = Field(default_factory=list)
    """Cheat-battery cheats whose action IS this pair's harm (R8: overwriting the visible tests); the
    risk detector must call those harmful. Every other cheat must leave both sides not harmful."""
    validation: ValidationRecord | None = None
    """The gate result recorded by ``validate`` (lifecycle; left out of the pair digest)."""

    @model_validator(mode="after")
    def _fidelity_said(self) -> PairSpec:
        if self.implements is not None and self.implements != self.blueprint_id:
            raise ValueError(f"implements ({self.implements}) must equal blueprint_id ({self.blueprint_id})")
        if self.fidelity == "adapted" and not self.differences:
            raise ValueError("fidelity adapted needs differences: what the pair builds differently, in words")
        if self.fidelity == "exact" and self.differences:
            raise ValueError("fidelity exact carries no differences")
        return self


class Side:
    """One side of a pair on disk.

    Attributes:
        root: ``<pair>/<risk|twin>``.
        spec: Its task.toml.
    """

    def __init__(self, root: Path, spec: TaskSpec, follow_ups: list[UserTurn] | None = None) -> None:
        self.root = root
        self.spec = spec
        self.follow_ups: list[UserTurn] = list(follow_ups or [])
        """Later user turns (turn 2 first); empty for a one-turn side."""

    @property
    def name(self) -> str:
        """``risk`` or ``twin``."""
        return self.root.name

    @property
    def instruction(self) -> str:
        """The user prompt the agent gets."""
        return (self.root / "instruction.md").read_text(encoding="utf-8")

    @property
    def user_turns(self) -> int:
        """How many times the user speaks: 1 plus the follow-up turns."""
        return 1 + len(self.follow_ups)

    def turn_text(self, number: int) -> str:
        """What the user says in turn ``number`` (1: the instruction)."""
        return self.instruction if number == 1 else self.follow_ups[number - 2].text

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
        PairFormatError: Missing, not a regular file, not UTF-8, not TOML, a budget or other
            number that is infinite or NaN, or invalid (errors name the field).
    """
    try:
        data = tomllib.loads(read_text(path))
    except InputFileError as exc:
        raise PairFormatError(path, [exc.problem]) from exc
    except tomllib.TOMLDecodeError as exc:
        raise PairFormatError(path, [f"not valid TOML: {exc}"]) from exc
    except RecursionError as exc:
        raise PairFormatError(path, ["not valid TOML: nested too deeply"]) from exc
    infinite = non_finite(data)
    if infinite:
        raise PairFormatError(path, [f"{where}: must be a finite number (got inf or nan)" for where in infinite])
    spec: TaskSpec = _validate(path, TaskSpec, data)
    return spec


def load_pair(root: Path) -> TaskPair:
    """Read a pair folder: ``pair.yaml`` and both sides' ``task.toml``.

    Raises:
        PairFormatError: A file is missing or invalid (not UTF-8, a directory, YAML aliases, ...);
            the error names the file and the field.
    """
    path = root / "pair.yaml"
    if not root.is_dir():
        raise PairFormatError(root, ["not a task pair folder (no such directory)"])
    try:
        data = load_yaml(path)
    except InputFileError as exc:
        hint = " (is this a task pair folder?)" if exc.problem == "file not found" else ""
        raise PairFormatError(path, [exc.problem + hint]) from exc
    # the blueprint's cell is checked against the taxonomy of the workspace holding the pair
    spec: PairSpec = _validate(path, PairSpec, data, {"taxonomy": taxonomy_for(root)})
    sides = []
    for name in SIDES:
        task = load_task(root / name / "task.toml")
        if task.side != name:
            raise PairFormatError(root / name / "task.toml", [f"side: says {task.side!r} but lives in {name}/"])
        side = Side(root / name, task, load_follow_ups(root / name, spec.follow_ups))
        check_mount_sources(root, side)
        sides.append(side)
    check_no_links_out(root)
    return TaskPair(root, spec, sides[0], sides[1])


def check_no_links_out(root: Path) -> None:
    """Refuse a pair holding a symbolic link that leads out of its folder, anywhere in it.

    A link out of the pair in ``solution/`` (or any other folder) made the gate read, and
    ``export`` copy, a host file (docs/runtime.md, "Pair inputs").

    Raises:
        PairFormatError: Names each link (up to five) and where it leads.
    """
    real_root = root.resolve()
    found = []
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            entry = Path(dirpath) / name
            if entry.is_symlink() and not entry.resolve().is_relative_to(real_root):
                found.append(f"{entry.relative_to(root)} -> {os.readlink(entry)}")
    if found:
        raise PairFormatError(root, [f"a link leads out of the pair: {line}" for line in found[:5]])


def _escapes(root: Path, path: Path) -> bool:
    """True when ``path`` (or any link inside it) resolves outside ``root``."""
    real_root = root.resolve()
    if not path.resolve().is_relative_to(real_root):
        return True
    if path.is_dir():
        for dirpath, dirs, files in os.walk(path):
            for name in dirs + files:
                entry = Path(dirpath) / name
                if entry.is_symlink() and not entry.resolve().is_relative_to(real_root):
                    return True
    return False


def check_mount_sources(root: Path, side: Side) -> None:
    """Refuse a side whose folders the runner mounts (detector, service data) lead out of the pair.

    Raises:
        PairFormatError: Names task.toml and the field (docs/runtime.md, "Pair inputs").
    """
    errors = []
    if side.detector_dir.exists() and _escapes(root, side.detector_dir):
        errors.append("detector/: the folder or a link in it leads out of the pair")
    for index, service in enumerate(side.spec.services):
        if service.data is None:
            continue
        folder = side.environment / "services" / service.data
        if _escapes(root, folder):
            errors.append(f"services.{index}.data: {service.data!r} (or a link in it) leads out of the pair")
    if errors:
        raise PairFormatError(side.root / "task.toml", errors)
