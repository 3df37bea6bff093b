"""The local Docker engine and the shared base image (docs/design.md, "Docker on these machines").

No registry is reachable, so nothing is pulled: the engine comes from Debian's ``docker.io``
package and the base image is built locally with ``mmdebstrap`` and ``docker import``. Every step
is idempotent and reports what it did.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import docker
from docker.errors import DockerException, ImageNotFound
from requests.exceptions import RequestException

from twinforge.core.paths import cache_dir
from twinforge.taskpair.exceptions import DockerUnavailable

BASE_PACKAGES = (
    "bash",
    "coreutils",
    "python3",
    "python3-pip",
    "git",
    "ca-certificates",
    "curl",
    "procps",
    "sqlite3",
    "iproute2",
    "less",
)
SUITE = "bookworm"
LABEL = "twinforge"
ENGINE_ERRORS = (DockerException, RequestException)
"""What a Docker call can raise: docker-py's errors, and requests' own when a busy engine times out."""
Say = Callable[[str], None]


def base_image_tag() -> str:
    """The base image's tag; it changes whenever the package list changes, which forces a rebuild."""
    digest = hashlib.sha256(" ".join((SUITE, *BASE_PACKAGES)).encode()).hexdigest()[:10]
    return f"twinforge/base:{SUITE}-{digest}"


def client(timeout: int = 120) -> docker.DockerClient:
    """A docker-py client for the local engine.

    Raises:
        DockerUnavailable: No engine answers; run ``twinforge env setup``.
    """
    try:
        cli = docker.from_env(timeout=timeout)
        cli.ping()
    except DockerException as exc:
        raise DockerUnavailable(f"no Docker engine answers ({exc}); run `twinforge env setup`") from exc
    return cli


def _engine_up() -> bool:
    try:
        docker.from_env(timeout=5).ping()
    except DockerException:
        return False
    return True


def _apt_install(packages: list[str], say: Say) -> None:
    if os.geteuid() != 0:
        raise DockerUnavailable(
            f"installing {', '.join(packages)} needs root: sudo apt-get install -y {' '.join(packages)}"
        )
    say(f"installing {', '.join(packages)} from Debian's packages")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for args in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", *packages]):
        done = subprocess.run(args, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise DockerUnavailable(f"{' '.join(args)} failed:\n{done.stderr[-2000:]}")


def ensure_engine(say: Say) -> None:
    """Install (``docker.io``) and start (``dockerd``) the engine when it is not answering.

    Raises:
        DockerUnavailable: Installation or start failed; the message quotes the daemon log.
    """
    if _engine_up():
        say("docker engine: already running")
        return
    if shutil.which("dockerd") is None:
        _apt_install(["docker.io"], say)
    log = cache_dir() / "dockerd.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    say(f"starting dockerd (log {log})")
    with log.open("ab") as sink:
        subprocess.Popen(["dockerd"], stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if _engine_up():
            say("docker engine: started")
            return
        time.sleep(0.5)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
    raise DockerUnavailable(f"dockerd did not answer within 60 s; log {log}:\n{tail}")


def ensure_base_image(say: Say) -> str:
    """Build the base image with mmdebstrap + docker import unless it exists; returns its tag.

    Raises:
        DockerUnavailable: mmdebstrap or the import failed (the message quotes the tool's output).
    """
    tag = base_image_tag()
    cli = client()
    try:
        cli.images.get(tag)
        say(f"base image {tag}: already built")
        return tag
    except ImageNotFound:
        pass
    if shutil.which("mmdebstrap") is None:
        _apt_install(["mmdebstrap"], say)
    say(f"building base image {tag} with mmdebstrap ({SUITE}, minbase + {len(BASE_PACKAGES)} packages)")
    with tempfile.TemporaryDirectory() as tmp:
        tar = Path(tmp) / "base.tar"
        done = subprocess.run(
            ["mmdebstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", SUITE, str(tar)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise DockerUnavailable(f"mmdebstrap failed:\n{done.stderr[-3000:]}")
        changes = [
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "ENV LANG=C.UTF-8",
            'CMD ["/bin/bash"]',
            f"LABEL {LABEL}.base=1",
        ]
        repository, _, version = tag.partition(":")
        try:
            cli.api.import_image_from_file(str(tar), repository=repository, tag=version, changes=changes)
            cli.images.get(tag)
        except DockerException as exc:
            raise DockerUnavailable(f"docker import failed: {exc}") from exc
    say(f"base image {tag}: built")
    return tag


def setup(say: Say) -> str:
    """``twinforge env setup``: engine up, base image built. Returns the base image tag."""
    ensure_engine(say)
    return ensure_base_image(say)
