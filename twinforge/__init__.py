"""twinforge shared core: settings, workspace, LLM clients, local model, CLI assembly."""

from twinforge.exceptions import (
    ConfigError,
    LocalModelError,
    ModelCallError,
    StructuredOutputError,
    TwinforgeError,
    WorkspaceError,
)
from twinforge.settings import ModelSettings, TriageSettings, WorkspaceConfig, load_config
from twinforge.workspace import Workspace

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
__version__ = "0.1.0"
