"""Errors of the Stage II implementer."""

from __future__ import annotations

from pathlib import Path

from twinforge.core.exceptions import TwinforgeError


class ImplementerError(TwinforgeError):
    """Stage II cannot start or continue as asked (the message says which blueprint and step)."""


class ArchetypeError(ImplementerError):
    """An archetype folder is invalid: its ``archetype.yaml`` or a template (names the file)."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        super().__init__(f"{path}: " + "; ".join(problems))


class NoArchetype(ImplementerError):
    """No archetype fits the blueprint's mechanism: it needs agent mode (the message says why)."""

    def __init__(self, blueprint_id: str, reason: str) -> None:
        self.blueprint_id = blueprint_id
        self.reason = reason
        super().__init__(f"{blueprint_id}: needs agent mode: {reason}")
