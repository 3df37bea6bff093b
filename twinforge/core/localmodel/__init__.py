"""The embedded local model: assemble GGUF weights from part packages and serve them with llama.cpp."""

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
