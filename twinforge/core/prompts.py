"""Prompt templates: jinja2 files in ``guidelines/prompts/``, rendered with ``StrictUndefined``.

A prompt is a pair ``<name>.system.j2`` + ``<name>.user.j2``; parts two prompts share live in
templates of their own that both include (``{% include "generate.guide.j2" %}``). Its version id,
``<name>@<first 10 hex of sha256 of both files and every template they include>``, is recorded on
everything it produced, so a prompt change, a shared part's too, is a data change with its own id.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, TemplateError, meta

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
        for template in self._templates():
            digest.update(self._source(template).encode("utf-8"))
        self.version = f"{name}@{digest.hexdigest()[:10]}"

    def _source(self, template: str) -> str:
        path = self.folder / template
        try:
            return path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"prompt template missing: {exc}", path=path) from exc

    def _templates(self) -> list[str]:
        """The pair's two files, then every template they include (recursively), each once, in order."""
        found = [f"{self.name}.system.j2", f"{self.name}.user.j2"]
        for template in found:  # grows while it is read: includes of includes are read too
            try:
                included = meta.find_referenced_templates(self._env.parse(self._source(template)))
            except TemplateError as exc:
                raise ConfigError(f"cannot read prompt template: {exc}", path=self.folder / template) from exc
            found += [t for t in included if t is not None and t not in found]
        return found

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
