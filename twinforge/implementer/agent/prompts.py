"""The implementing agent's instructions: ``guidelines/implementer/agent.task.j2`` and ``agent.round.j2``."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from twinforge.implementer.guides import implementer_dir

TEMPLATES = ("agent.task.j2", "agent.round.j2")


class AgentPrompts:
    """The first round's task and the later rounds' report, rendered with ``StrictUndefined``.

    Attributes:
        version: ``agent@<first 10 hex of sha256 of both templates>``, recorded on what they produced.
    """

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or implementer_dir()
        self._env = Environment(
            loader=FileSystemLoader(self.folder), undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True
        )
        digest = hashlib.sha256(b"".join((self.folder / name).read_bytes() for name in TEMPLATES))
        self.version = f"agent@{digest.hexdigest()[:10]}"

    def task(self, **variables: Any) -> str:
        """Round 1: the blueprint, where everything is, how to check and submit."""
        return self._env.get_template("agent.task.j2").render(**variables).strip()

    def round(self, **variables: Any) -> str:
        """Round 2 and later: the whole gate's report of the last submission."""
        return self._env.get_template("agent.round.j2").render(**variables).strip()
