"""Errors of the blueprint domain."""

from __future__ import annotations

from pathlib import Path

from twinforge.core.exceptions import TwinforgeError


class BlueprintFileError(TwinforgeError):
    """A blueprint file cannot be read or does not validate.

    Attributes:
        path: The file.
        errors: One line per problem, each naming the field.
    """

    def __init__(self, path: Path, errors: list[str]) -> None:
        super().__init__(f"{path}: " + "; ".join(errors))
        self.path = path
        self.errors = errors


class InvalidTransition(TwinforgeError):
    """A status change the lifecycle does not allow (docs/design.md, "Blueprint lifecycle").

    Attributes:
        blueprint_id: The blueprint.
        current: Its status.
        target: The refused status.
    """

    def __init__(self, blueprint_id: str, current: str, target: str, allowed: list[str]) -> None:
        super().__init__(
            f"{blueprint_id}: cannot go from {current} to {target}; allowed: {', '.join(allowed) or 'none'}"
        )
        self.blueprint_id = blueprint_id
        self.current = current
        self.target = target


class TaxonomyError(TwinforgeError):
    """The taxonomy file is invalid, or an id names no cell in it."""


class ReviewActionError(TwinforgeError):
    """A human review action cannot be applied as asked (missing reason, wrong status, bad edit)."""


class ConflictError(TwinforgeError):
    """A blueprint changed on disk since it was loaded; the write was refused (nothing overwritten).

    Attributes:
        blueprint_id: The blueprint.
    """

    def __init__(self, blueprint_id: str) -> None:
        super().__init__(
            f"{blueprint_id} changed on disk since it was loaded (another reviewer or process); "
            "your action was not saved and the entry was reloaded"
        )
        self.blueprint_id = blueprint_id


class ChecksError(TwinforgeError):
    """A check-rule or scenario-vocabulary file is invalid (the message names the file and the rule)."""
