"""Task images: built from a side's ``environment/`` (``FROM`` the local base image), cached by content.

Builds run with no network (``network_mode="none"``): a pair's image may only use what its build
context and the base image hold, so it builds the same on an air-gapped machine and never reaches a
host outside it (docs/task-pairs.md, "Builds"). A pair that needs packages ships them in the context
(wheels: ``pip install --no-index --find-links``); the gate's static check names download steps.
"""

from __future__ import annotations

import hashlib

import docker
from docker.errors import BuildError, DockerException, ImageNotFound

from twinforge.core.digests import folder_digest
from twinforge.taskpair.exceptions import RunError
from twinforge.taskpair.format.spec import Side

LABELS = {"twinforge": "1", "twinforge.image": "task"}


def image_tag(pair_id: str, side: Side, base: str) -> str:
    """``twinforge-task/<pair>-<side>:<hash of context and base>``; a changed file means a new tag."""
    digest = hashlib.sha256((folder_digest(side.environment) + base).encode()).hexdigest()[:12]
    return f"twinforge-task/{pair_id}-{side.name}:{digest}"


def build_image(cli: docker.DockerClient, pair_id: str, side: Side, base: str) -> tuple[str, bool]:
    """Build (or reuse) the image of one side.

    Returns:
        ``(tag, built)``; ``built`` is False when an image for this exact content already existed.

    Raises:
        RunError: The Dockerfile is missing or the build failed, e.g. a step that needed the network
            (the message quotes the build log).
    """
    if not (side.environment / "Dockerfile").is_file():
        raise RunError("build", f"{side.environment / 'Dockerfile'} is missing")
    tag = image_tag(pair_id, side, base)
    try:
        cli.images.get(tag)
        return tag, False
    except ImageNotFound:
        pass
    try:
        cli.images.build(
            path=str(side.environment),
            tag=tag,
            buildargs={"BASE": base},
            labels=LABELS,
            rm=True,
            forcerm=True,
            network_mode="none",
        )
    except BuildError as exc:
        lines = [str(chunk.get("stream") or chunk.get("error") or "").rstrip() for chunk in exc.build_log]
        tail = "\n".join(line for line in lines if line)[-2000:]
        raise RunError("build", f"{pair_id}/{side.name}: {exc.msg}\n{tail}") from exc
    except DockerException as exc:
        raise RunError("build", f"{pair_id}/{side.name}: {exc}") from exc
    return tag, True
