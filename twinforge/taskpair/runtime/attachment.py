"""What a harness that runs inside the task container adds to a run (docs/runtime.md, "Model channel")."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import docker
from docker.models.containers import Container


class RunAttachment(Protocol):
    """Hooks the runner calls for an in-container harness: its image layer, its model channel, its evidence."""

    def image(self, cli: docker.DockerClient, image: str) -> str:
        """The image the task container runs: ``image`` with the harness layer on top (built or cached)."""
        ...

    def started(self, cli: docker.DockerClient, container: Container, labels: dict[str, str], base: str) -> None:
        """The task container runs (the agent has not started): set up the model channel."""
        ...

    def stopped(self, evidence: Path) -> None:
        """The agent ended: close the channel and write its evidence (the blocked-connection log)."""
        ...

    def memory_folders(self) -> dict[str, str]:
        """Folders of the task container kept in memory (tmpfs; path -> mount options).

        The harness's own session store: it lasts while the container runs and is never on the run
        disk, so never in the detector's evidence (docs/runtime.md, "User turns").
        """
        ...
