"""The exporter's jinja2 templates (``exporter/templates``), rendered with ``StrictUndefined``."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

_ENV = Environment(
    loader=PackageLoader("twinforge.exporter", "templates"),
    undefined=StrictUndefined,
    keep_trailing_newline=True,
    trim_blocks=True,
    lstrip_blocks=True,
)


def render(template: str, **context: Any) -> str:
    """Render ``exporter/templates/<template>``; a missing variable raises jinja2's UndefinedError."""
    return _ENV.get_template(template).render(**context)
