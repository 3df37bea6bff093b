"""The shared core: settings, workspace, LLM clients, local model, console (docs/design.md, "Packages")."""

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
