"""``model status``: which local models are assembled and which servers run (the ``--json`` body)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, computed_field

from twinforge.core.localmodel.assemble import is_verified, model_path
from twinforge.core.localmodel.build import ServerBuild, built, server_binary
from twinforge.core.localmodel.catalog import CATALOG
from twinforge.core.localmodel.server import ServerInfo, running_servers


class LocalModelState(BaseModel):
    """One catalog model on this machine.

    Attributes:
        name: Catalog name.
        path: Where its GGUF file is (or would be) assembled.
        assembled: The file is there and its sha256 matches the catalog.
        description: The catalog's one-line description.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    path: str
    assembled: bool
    description: str


class ServerBinaryState(BaseModel):
    """The ``llama-server`` binary: where it is and what was built (``None``: not built)."""

    model_config = ConfigDict(extra="forbid")

    binary: str
    build: ServerBuild | None


class ListedServer(ServerInfo):
    """A running server as listed: its state file's fields plus ``base_url`` (``http://host:port/v1``)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def base_url(self) -> str:
        """OpenAI-compatible base URL, e.g. ``http://127.0.0.1:8080/v1`` (printed, unlike in the state file)."""
        return f"{self.root_url}/v1"


class ModelStatus(BaseModel):
    """What ``model status --json`` prints: ``models``, ``server`` and ``servers``."""

    model_config = ConfigDict(extra="forbid")

    models: list[LocalModelState]
    server: ServerBinaryState
    servers: list[ListedServer]


def model_status(servers: list[ServerInfo] | None = None) -> ModelStatus:
    """The catalog models, the server binary and the running servers.

    Args:
        servers: The running servers, when the caller already listed them (default: list them;
            listing removes stale state files).
    """
    infos = running_servers() if servers is None else servers
    return ModelStatus(
        models=[
            LocalModelState(name=s.name, path=str(model_path(s)), assembled=is_verified(s), description=s.description)
            for s in CATALOG.values()
        ],
        server=ServerBinaryState(binary=str(server_binary()), build=built()),
        servers=[ListedServer(**i.model_dump()) for i in infos],
    )
