"""Prompt templates: jinja2 files in ``guidelines/prompts/``, rendered with ``StrictUndefined``.

A prompt is a pair ``<name>.system.j2`` + ``<name>.user.j2``. Its version id,
``<name>@<first 10 hex of sha256 of both files>``, is recorded on everything it produced, so a
prompt change is a data change with its own id.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, TemplateError

from twinforge.core.exceptions import ConfigError
from twinforge.core.llm.protocol import Message
from twinforge.core.paths import guidelines_dir


class Prompt:
    """A system + user prompt template pair.

    Args:
        name: Base name, e.g. ``generate``.
        folder: Template folder (default: ``guidelines/prompts``).

    Raises:
        ConfigError: A template file is missing.
    """

    def __init__(self, name: str, folder: Path | None = None) -> None:
        self.name = name
        self.folder = folder or guidelines_dir() / "prompts"
        self._env = Environment(
            loader=FileSystemLoader(self.folder),
            undefined=StrictUndefined,
            keep_trailing_newline=True,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        digest = hashlib.sha256()
        for part in ("system", "user"):
            path = self.folder / f"{name}.{part}.j2"
            try:
                digest.update(path.read_bytes())
            except OSError as exc:
                raise ConfigError(f"prompt template missing: {exc}", path=path) from exc
        self.version = f"{name}@{digest.hexdigest()[:10]}"

    def render(self, **variables: Any) -> list[Message]:
        """Render both templates into ``[system, user]`` messages.

        Raises:
            ConfigError: A variable the template uses was not given, or the template is broken.
        """
        try:
            return [
                Message(role=part, content=self._env.get_template(f"{self.name}.{part}.j2").render(**variables))
                for part in ("system", "user")
            ]
        except TemplateError as exc:
            raise ConfigError(f"cannot render prompt {self.version}: {exc}", path=self.folder) from exc
