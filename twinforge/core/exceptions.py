"""Errors of the shared core. Each carries the data a user needs to act on it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from twinforge.core.llm.usage import Usage


class TwinforgeError(Exception):
    """Base class of every error twinforge raises on purpose."""


class ConfigError(TwinforgeError):
    """A configuration file or value is invalid.

    Attributes:
        path: The file that holds the bad value, when there is one.
        field: Dotted name of the offending field, when known.
    """

    def __init__(self, message: str, *, path: Path | None = None, field: str | None = None) -> None:
        where = ", ".join(p for p in (str(path) if path else "", f"field {field}" if field else "") if p)
        super().__init__(f"{where}: {message}" if where else message)
        self.path = path
        self.field = field


class WorkspaceError(TwinforgeError):
    """The workspace is missing, not initialised, or its repository is unusable."""


class RepositoryStateError(WorkspaceError):
    """The workspace's git repository is in a state where twinforge must not commit.

    Detached HEAD, a rebase, merge, cherry-pick or revert in progress, or an index lock
    (docs/workspace.md, "Git rules"). Raised before any model call.
    """


class ForeignChangeError(WorkspaceError):
    """Files hold uncommitted changes twinforge did not make; they are left alone.

    Attributes:
        paths: The files, relative to the workspace.
    """

    def __init__(self, message: str, paths: list[str]) -> None:
        super().__init__(message)
        self.paths = paths


class CommitError(WorkspaceError):
    """git refused a commit (a hook, a lock, a broken repository).

    Attributes:
        paths: Files written but not committed (journaled: the next run commits them once git
            accepts the commit).
    """

    def __init__(self, message: str, paths: list[str]) -> None:
        super().__init__(message)
        self.paths = paths


class ModelCallError(TwinforgeError):
    """A model call failed after the transport's bounded retries (timeout, HTTP error, refusal).

    Attributes:
        role: The model role that was called (generator, reviewer, ...), when known.
    """

    def __init__(self, message: str, *, role: str | None = None) -> None:
        super().__init__(f"[{role}] {message}" if role else message)
        self.role = role


class StructuredOutputError(TwinforgeError):
    """The model's output stayed invalid after the validation-feedback retries.

    Attributes:
        errors: One line per validation problem of the last attempt.
        raw: The last raw model output.
        attempts: How many calls returned.
        raws: Every raw output, in order, kept so no data is lost.
        usage: What those calls spent (calls, tokens, seconds), when the caller measured it: a failed
            item's calls cost as much as a stored one's, and a batch's figures count them.
    """

    def __init__(
        self,
        message: str,
        *,
        errors: list[str],
        raw: str,
        attempts: int,
        raws: list[str] | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message + ("\n  " + "\n  ".join(errors) if errors else ""))
        self.errors = errors
        self.raw = raw
        self.attempts = attempts
        self.raws = raws if raws is not None else [raw]
        self.usage = usage


class ModelRefusal(StructuredOutputError):
    """The model declined to answer (a refusal, or the provider's content filter); not re-asked.

    Attributes:
        refusal: The refusal text the model gave (may be empty).
    """

    def __init__(
        self, message: str, *, refusal: str, attempts: int, raws: list[str], usage: Usage | None = None
    ) -> None:
        super().__init__(message, errors=[], raw=refusal, attempts=attempts, raws=raws, usage=usage)
        self.refusal = refusal


class LocalModelError(TwinforgeError):
    """The embedded local model cannot be assembled, started or reached."""
