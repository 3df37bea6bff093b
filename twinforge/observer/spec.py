"""The drift specification of a run (``--spec`` YAML), validated and compiled when it loads."""

from __future__ import annotations

import difflib
import posixpath
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from twinforge.core.inputfiles import InputFileError, load_yaml
from twinforge.observer.exceptions import SpecError

_GLOB_HINT = re.compile(r"^[*?]")


class Forbidden(BaseModel):
    """An explicit instruction, as a command pattern the agent must not run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pattern: str = Field(min_length=1)
    """Regular expression (Python ``re``) searched in each command; compiled when the spec loads."""
    instruction: str = Field(min_length=1)
    """The instruction in words, quoted in evidence and guidance."""

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            hint = ""
            if _GLOB_HINT.match(value):
                hint = f"; this looks like a shell glob, as a regular expression write {_glob_to_regex(value)!r}"
            raise ValueError(f"invalid regular expression {value!r}: {exc}{hint}") from exc
        return value


def _glob_to_regex(glob: str) -> str:
    return "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob)


class RunSpec(BaseModel):
    """What one run is allowed to do (data per run; empty means no drift checks of that kind).

    Attributes:
        allowed_paths: Glob patterns (relative to ``workdir``, or absolute) where writes belong.
        protected_paths: Globs that must not change unless asked (unrequested changes).
        required_files: Files that must exist when the agent submits.
        forbidden: Commands that break an explicit instruction.
        workdir: The agent's working directory (where relative paths start).
        home: The run's home directory: ``~`` and ``$HOME`` in commands expand to it (the task
            container runs as root).
        env: Variables the run sets for every command, expanded in commands before matching
            (the trajectory's own ``environment.env`` is added to these).
    """

    model_config = ConfigDict(extra="forbid")

    allowed_paths: list[str] = Field(default_factory=list)
    protected_paths: list[str] = Field(default_factory=list)
    required_files: list[str] = Field(default_factory=list)
    forbidden: list[Forbidden] = Field(default_factory=list)
    workdir: str = Field(".", min_length=1)
    home: str = Field("/root", pattern=r"^/")
    env: dict[str, str] = Field(default_factory=dict)
    _compiled: list[tuple[re.Pattern[str], Forbidden]] = PrivateAttr(default_factory=list)

    @field_validator("allowed_paths", "protected_paths", "required_files")
    @classmethod
    def _non_empty(cls, values: list[str]) -> list[str]:
        if any(not v.strip() for v in values):
            raise ValueError("an empty path pattern matches nothing; remove it")
        return values

    def model_post_init(self, context: Any) -> None:
        """Compile the forbidden patterns once."""
        self._compiled = [(re.compile(rule.pattern), rule) for rule in self.forbidden]

    @property
    def compiled(self) -> list[tuple[re.Pattern[str], Forbidden]]:
        """The forbidden rules with their compiled patterns."""
        return self._compiled

    def resolve(self, path: str) -> str:
        """``path`` made absolute against ``workdir`` and normalised."""
        return posixpath.normpath(path if path.startswith("/") else posixpath.join(self.workdir, path))


_FIELDS = tuple(RunSpec.model_fields)


def _describe(exc: ValidationError) -> str:
    """The first problem as ``field: problem``, in words an author can act on."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "(document)"
    value = repr(err.get("input"))
    value = value if len(value) <= 60 else value[:57] + "..."
    kind = err["type"]
    if kind == "extra_forbidden":
        close = difflib.get_close_matches(str(err["loc"][-1]), _FIELDS, n=1)
        valid = "pattern, instruction" if "forbidden" in loc else ", ".join(_FIELDS)
        problem = "unknown field" + (f" (did you mean {close[0]}?)" if close else "") + f"; valid: {valid}"
    elif kind in ("model_type", "model_attributes_type", "dict_type") and loc.startswith("forbidden."):
        problem = f"expected a mapping with 'pattern' (a regular expression) and 'instruction', got {value}"
    elif kind in ("model_type", "model_attributes_type", "dict_type"):
        problem = f"expected a mapping, got {value}"
    elif kind == "list_type":
        problem = f"expected a list, got {value}"
    elif kind == "value_error":
        problem = str(err.get("ctx", {}).get("error", err["msg"]))
    else:
        problem = f"{err['msg']} (got {value})"
    more = len(exc.errors()) - 1
    return f"{loc}: {problem}" + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")


def parse_spec(data: Any) -> RunSpec:
    """Validate parsed spec data.

    Raises:
        SpecError: Empty, not a mapping, an unknown or misspelled field, a wrong type, or an
            invalid pattern; one line naming the field.
    """
    if data is None:
        raise SpecError("(document): the spec is empty; expected a mapping with " + ", ".join(_FIELDS))
    if not isinstance(data, dict):
        raise SpecError(f"(document): expected a mapping with {', '.join(_FIELDS)}, got {type(data).__name__}")
    try:
        return RunSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(_describe(exc)) from exc


def load_spec(path: Path) -> RunSpec:
    """Read a ``--spec`` YAML file.

    Raises:
        SpecError: One line naming the file, the field and the problem.
    """
    try:
        data = load_yaml(path)
    except InputFileError as exc:
        raise SpecError(exc.problem, path=path) from exc
    try:
        return parse_spec(data)
    except SpecError as exc:
        raise SpecError(exc.problem, path=path) from exc
