"""Harbor itself, run here to check an export: a Debian 13 tools container with Harbor installed.

Harbor 0.26 needs Python >= 3.12 and sends usage telemetry to an outside server unless
``HARBOR_TELEMETRY`` is one of 0/false/no/off/disabled (harbor 0.26, ``harbor/telemetry.py``,
``_telemetry_disabled``). So Harbor only ever runs here

- in a container built from Debian 13 (``mmdebstrap trixie`` with python3-venv, docker-cli and
  docker-compose, then ``docker import``), with Harbor installed from wheels that pip downloaded on
  the host (``pip download --python-version 3.13 --only-binary=:all:``, manylinux up to 2_34) and
  installed in a build without network;
- with ``HARBOR_TELEMETRY=0`` and ``--network none``;
- with the host's Docker socket mounted (its Docker environment starts the task containers on the
  host's engine) and the work folder mounted at the same path (Harbor hands host paths to the engine:
  build contexts and the trial folders it bind-mounts).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from twinforge.core.paths import cache_dir
from twinforge.exporter.exceptions import HarborToolsError

HARBOR_VERSION = "0.26.0"
PYTHON_VERSION = "3.13"
PLATFORMS = ("manylinux_2_34_x86_64", "manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
SUITE = "trixie"
TOOLS_PACKAGES = ("python3-venv", "docker-cli", "docker-compose", "ca-certificates")
TELEMETRY_OFF = {"HARBOR_TELEMETRY": "0"}
Say = Callable[[str], None]


def _tag() -> str:
    digest = hashlib.sha256(" ".join((SUITE, *TOOLS_PACKAGES, HARBOR_VERSION)).encode()).hexdigest()[:10]
    return f"twinforge/harbor:{HARBOR_VERSION}-{digest}"


def _run(step: str, args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise HarborToolsError(step, f"{' '.join(args[:4])} ... failed:\n{(done.stderr or done.stdout)[-3000:]}")
    result: subprocess.CompletedProcess[str] = done
    return result


def wheels(say: Say) -> Path:
    """Download Harbor's wheels for CPython 3.13 on Linux once (pip's own cache makes repeats cheap)."""
    folder = cache_dir() / "harbor-wheels" / HARBOR_VERSION
    marker = folder / ".complete"
    if marker.is_file():
        return folder
    say(f"downloading Harbor {HARBOR_VERSION} and its wheels for Python {PYTHON_VERSION}")
    folder.mkdir(parents=True, exist_ok=True)
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    _run(
        "wheels",
        [
            sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(folder),
            "--python-version", PYTHON_VERSION, "--only-binary=:all:", *platforms,
            f"harbor=={HARBOR_VERSION}",
        ],
    )  # fmt: skip
    marker.write_text("ok\n")
    return folder


def _image_exists(tag: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode == 0


def ensure_image(say: Say) -> str:
    """Build the Harbor tools image unless it exists; returns its tag.

    Raises:
        HarborToolsError: A download, ``mmdebstrap``, import or build step failed (its output quoted).
    """
    tag = _tag()
    if _image_exists(tag):
        return tag
    folder = wheels(say)
    rootfs = f"twinforge/harbor-rootfs:{tag.split(':', 1)[1]}"
    if not _image_exists(rootfs):
        say(f"building the Debian {SUITE} tools root file system with mmdebstrap")
        with tempfile.TemporaryDirectory() as tmp:
            tar = Path(tmp) / "rootfs.tar"
            _run(
                "rootfs", ["mmdebstrap", "--variant=minbase", f"--include={','.join(TOOLS_PACKAGES)}", SUITE, str(tar)]
            )
            changes = ["ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "ENV LANG=C.UTF-8"]
            _run("rootfs", ["docker", "import", *(a for c in changes for a in ("--change", c)), str(tar), rootfs])
    say(f"installing Harbor {HARBOR_VERSION} into {tag} (no network during the build)")
    with tempfile.TemporaryDirectory() as tmp:
        context = Path(tmp)
        (context / "wheels").symlink_to(folder)
        dockerfile = (
            f"FROM {rootfs}\n"
            "COPY wheels/ /wheels/\n"
            "RUN python3 -m venv /opt/harbor && /opt/harbor/bin/pip install --quiet --no-index "
            f"--find-links /wheels harbor=={HARBOR_VERSION} && rm -rf /wheels /root/.cache\n"
            "ENV PATH=/opt/harbor/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
            "ENV HARBOR_TELEMETRY=0\n"
        )
        (context / "Dockerfile").write_text(dockerfile)
        # docker build does not follow the symlink; tar -h sends the wheels themselves as the context
        _run("image", ["bash", "-c", f"tar -C {context} -ch . | docker build --network none -q -t {tag} -"])
    return tag


def harbor(tag: str, workdir: Path, args: list[str], *, timeout_s: float = 1800) -> subprocess.CompletedProcess[str]:
    """Run ``harbor ARGS`` in the tools container: telemetry off, no network, ``workdir`` at its own path.

    Returns:
        The finished process (stdout and stderr as text); a non-zero exit is returned, not raised.
    """
    folder = str(workdir.resolve())
    command = [
        "docker", "run", "--rm", "--network", "none",
        *(a for key, value in TELEMETRY_OFF.items() for a in ("-e", f"{key}={value}")),
        "-v", "/var/run/docker.sock:/var/run/docker.sock",
        "-v", f"{folder}:{folder}", "-w", folder,
        tag, "harbor", *args,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)


def python(tag: str, workdir: Path, code: str) -> subprocess.CompletedProcess[str]:
    """Run a Python snippet with Harbor importable, in the same confinement as :func:`harbor`."""
    folder = str(workdir.resolve())
    command = [
        "docker", "run", "--rm", "--network", "none",
        *(a for key, value in TELEMETRY_OFF.items() for a in ("-e", f"{key}={value}")),
        "-v", f"{folder}:{folder}", "-w", folder,
        tag, "python3", "-c", code,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


@dataclass(frozen=True)
class TrialReward:
    """One finished Harbor trial, read from its ``result.json``.

    Attributes:
        task: The task's name.
        rewards: The verifier's rewards (empty when the verifier failed).
        error: The exception Harbor recorded, if any.
    """

    task: str
    rewards: dict[str, float]
    error: str | None


def trial_rewards(job_dir: Path) -> list[TrialReward]:
    """Rewards of every trial in a Harbor job folder (``<job>/<trial>/result.json``, Harbor's TrialResult)."""
    found = []
    for path in sorted(job_dir.glob("*/result.json")):
        data = json.loads(path.read_text())
        verifier = data.get("verifier_result") or {}
        error = data.get("exception_info")
        found.append(
            TrialReward(
                task=str(data.get("task_name", path.parent.name)),
                rewards={k: float(v) for k, v in (verifier.get("rewards") or {}).items()},
                error=json.dumps(error) if error else None,
            )
        )
    return found
