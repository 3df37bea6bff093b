"""DO / DON'T guidance for a finding: jinja2 templates in ``guidelines/observer/``, optionally LLM-written."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from pydantic import BaseModel, Field

from twinforge.core.exceptions import ModelCallError, StructuredOutputError
from twinforge.core.llm import ChatModel, Message, make_chat_model, request_object
from twinforge.core.paths import guidelines_dir
from twinforge.core.settings import ModelSettings
from twinforge.observer.findings import Finding

Level = Literal["nudge", "plan", "stop"]


class Advice(BaseModel):
    """DO and DON'T lines for one finding."""

    do: list[str] = Field(min_length=1, max_length=4)
    dont: list[str] = Field(min_length=1, max_length=4)


@cache
def _data(folder: Path) -> dict[str, dict[str, list[str]]]:
    data: dict[str, dict[str, list[str]]] = yaml.safe_load((folder / "guidance.yaml").read_text())["kinds"]
    return data


def writer_for(settings: ModelSettings | None) -> GuidanceWriter:
    """The guidance writer a workspace's ``[models.observer]`` block asks for (templates when absent)."""
    return GuidanceWriter(model=make_chat_model(settings, role="observer") if settings is not None else None)


class GuidanceWriter:
    """Renders the message injected for a finding at a given escalation level.

    Args:
        folder: Template folder (default ``guidelines/observer``).
        model: Optional ``[models.observer]`` model that writes the DO / DON'T lines for the
            situation; the templates' own lines are used when it is absent or fails.
    """

    def __init__(self, folder: Path | None = None, model: ChatModel | None = None) -> None:
        self.folder = folder or guidelines_dir() / "observer"
        self.model = model
        self._env = Environment(
            loader=FileSystemLoader(self.folder), undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True
        )

    def advice(self, finding: Finding) -> Advice:
        """DO / DON'T lines: the model's when configured and valid, else the data file's."""
        fallback = _data(self.folder).get(
            finding.kind, {"do": ["Step back and re-read the task."], "dont": ["Do not repeat what did not work."]}
        )
        if self.model is not None:
            prompt = [
                Message(role="system", content="You coach a coding agent. Answer with JSON only."),
                Message(
                    role="user",
                    content=f"The agent shows this misbehaviour: {finding.kind} "
                    f"({finding.evidence}). Give 1-3 short DO lines and 1-3 short DON'T lines.",
                ),
            ]
            try:
                return request_object(self.model, prompt, Advice, retries=1).value
            except (ModelCallError, StructuredOutputError):
                pass
        return Advice(do=fallback["do"], dont=fallback["dont"])

    def render(self, finding: Finding, level: Level) -> str:
        """The injected message text."""
        advice = self.advice(finding)
        return self._env.get_template(f"{level}.j2").render(finding=finding, do=advice.do, dont=advice.dont).strip()
