"""Can an upstream serve a harness's API shape? The one question the preflight and the proxy share.

docs/calibration.md, "Preflight" and docs/runtime.md, "Harnesses": each harness speaks one model API
(Mini-SWE-agent, OpenCode and Pi Chat Completions; Codex Responses; Claude Code Anthropic Messages).
An upstream serves the shapes its model block lists in ``api_shapes``; a shape it lacks can still be
served when the proxy translates it from one the upstream has.

The proxy translates every shape into any other (``twinforge.harness.translation``): a harness
whose shape the upstream lacks goes upstream in Chat Completions where served, else the first shape
served, the rule :func:`~twinforge.harness.translation.upstream_shape` applies at run time.
"""

from __future__ import annotations

from dataclasses import dataclass

from twinforge.core.settings import ModelSettings
from twinforge.harness.shapes import Shape
from twinforge.harness.translation import upstream_shape

NAMES: dict[Shape, str] = {"chat": "Chat Completions", "responses": "Responses", "messages": "Anthropic Messages"}
"""Each shape in words, for messages."""


@dataclass(frozen=True)
class Serving:
    """How an upstream serves one shape.

    Attributes:
        shape: The shape the harness speaks.
        upstream: The shape the call goes upstream in.
    """

    shape: Shape
    upstream: Shape

    @property
    def translated(self) -> bool:
        """The proxy translates between the two."""
        return self.shape != self.upstream


def serving(upstream: ModelSettings, shape: Shape) -> Serving | None:
    """How the upstream serves ``shape``: directly, by translation, or not at all (``None``).

    Args:
        upstream: The model block with its ``api_shapes`` (``WorkspaceConfig.with_api_shapes`` fills
            in the default: all three for the embedded server, else Chat Completions).
        shape: The harness's shape.
    """
    served = upstream.served_shapes()
    if not served:
        return None
    return Serving(shape, upstream_shape(shape, served))
