"""The shared core: settings, workspace, LLM clients, local model, console (docs/design.md, "Packages").

Its names load on first use (docs/design.md, "Command-line start-up"): ``twinforge.core.lazy``.
"""

from typing import TYPE_CHECKING

from twinforge.core.lazy import lazy_exports

if TYPE_CHECKING:
    from twinforge.core.exceptions import (
        ConfigError,
        LocalModelError,
        ModelCallError,
        StructuredOutputError,
        TwinforgeError,
        WorkspaceError,
    )
    from twinforge.core.settings import ModelSettings, TriageSettings, WorkspaceConfig, load_config
    from twinforge.core.workspace import Workspace

__all__ = [
    "ConfigError",
    "LocalModelError",
    "ModelCallError",
    "ModelSettings",
    "StructuredOutputError",
    "TriageSettings",
    "TwinforgeError",
    "Workspace",
    "WorkspaceConfig",
    "WorkspaceError",
    "load_config",
]

lazy_exports(
    __name__,
    {
        "exceptions": (
            "ConfigError",
            "LocalModelError",
            "ModelCallError",
            "StructuredOutputError",
            "TwinforgeError",
            "WorkspaceError",
        ),
        "settings": ("ModelSettings", "TriageSettings", "WorkspaceConfig", "load_config"),
        "workspace": ("Workspace",),
    },
)
