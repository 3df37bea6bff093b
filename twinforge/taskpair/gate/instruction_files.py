"""The files the coding-agent harnesses read by themselves, read from the built image (docs/task-pairs.md).

Claude Code, Codex, OpenCode and Pi put some files of the repository into their prompt or settings
without the agent asking: ``CLAUDE.md``, ``AGENTS.md``, ``.opencode/``, ... in the working folder and
every folder above it, and what their home folders hold (``guidelines/design-principles.yaml``,
``harness_instruction_files`` and ``harness_home_folders``). An evaluation cue there reaches the
model before its first step. The static check searches the build context; this one reads the
files as the image really holds them (a setup script may write them at build time), so what the
harness reads is what was checked.
"""

from __future__ import annotations

import io
import posixpath
import secrets
import tarfile
from contextlib import suppress

import docker
from docker.errors import DockerException, NotFound

from twinforge.taskpair.format.spec import Side
from twinforge.taskpair.gate.principles import MAX_MEMBER_BYTES, MAX_MEMBERS, Principles, Visible, cues_in
from twinforge.taskpair.gate.report import CheckResult

MAX_BYTES = 8 * 2**20
"""Bytes of instruction files read from one image (more fails the check: nobody writes that much)."""


def candidate_paths(workdir: str, rules: Principles) -> dict[str, list[str]]:
    """Every path a harness may read by itself: ``{absolute path: [harness, ...]}``.

    The names of ``harness_instruction_files`` in ``workdir`` and each folder above it, then each
    home folder (read by the harness whose folder it is, named by the folder).
    """
    names: dict[str, list[str]] = {}
    for harness, files in rules.harness_instruction_files.items():
        for name in files:
            names.setdefault(name, []).append(harness)
    folders, folder = [], posixpath.normpath(workdir)
    while True:
        folders.append(folder)
        if folder == "/":
            break
        folder = posixpath.dirname(folder)
    paths = {posixpath.join(f, name): harnesses for f in folders for name, harnesses in names.items()}
    for harness, homes in rules.harness_home_folders.items():
        for home in homes:
            paths.setdefault(home, []).append(harness)
    return paths


def _read(container: docker.models.containers.Container, path: str, budget: list[int]) -> list[Visible] | str:
    """The regular files at ``path`` (a file or a folder) in the container, or why they could not be read."""
    try:
        stream, _ = container.get_archive(path)
    except NotFound:
        return []
    data = bytearray()
    for chunk in stream:
        data += chunk
        if len(data) > budget[0]:
            return f"more than {MAX_BYTES} bytes of instruction files"
    budget[0] -= len(data)
    parent = posixpath.dirname(path)
    found = []
    try:
        with tarfile.open(fileobj=io.BytesIO(bytes(data))) as archive:
            for member in archive.getmembers()[:MAX_MEMBERS]:
                handle = archive.extractfile(member) if member.isfile() and member.size <= MAX_MEMBER_BYTES else None
                if handle is not None:
                    found.append(Visible(posixpath.join(parent, member.name), handle.read()))
    except tarfile.TarError as exc:
        return f"{path}: unreadable archive from Docker ({exc})"
    return found


def instruction_files_check(
    cli: docker.DockerClient, side: Side, image: str, rules: Principles, labels: dict[str, str]
) -> CheckResult:
    """No evaluation cue in any file a harness reads by itself from the side's built image.

    Args:
        cli: Docker client.
        side: The side (its ``workdir``).
        image: The side's built image.
        rules: The design-principle data (cues, instruction file names, home folders).
        labels: Labels of the short-lived container the files are read from (for the reaper).

    Returns:
        The check; its detail lists the files found with the harnesses that read them, or the cues
        as ``path:line: 'cue'``.
    """
    name = f"{side.name}: no evaluation cues in the files the harnesses read (CLAUDE.md, AGENTS.md, .opencode/, ...)"
    paths = candidate_paths(side.spec.workdir, rules)
    try:
        container = cli.containers.create(
            image, command=["true"], labels=labels, network_disabled=True, name=f"tf-files-{secrets.token_hex(6)}"
        )
    except DockerException as exc:
        return CheckResult(name, False, f"could not read the image {image}: {exc}")
    found: list[tuple[Visible, list[str]]] = []
    budget = [MAX_BYTES]
    try:
        for path, harnesses in paths.items():
            read = _read(container, path, budget)
            if isinstance(read, str):
                return CheckResult(name, False, read)
            found += [(item, harnesses) for item in read]
    except DockerException as exc:
        return CheckResult(name, False, f"could not read the image {image}: {exc}")
    finally:
        with suppress(DockerException):
            container.remove(force=True)
    cues = sorted({cue for item, _ in found for cue in cues_in(item, rules.evaluation_cues)})
    if cues:
        return CheckResult(name, False, "; ".join(cues[:8]))
    listed = "; ".join(f"{item.name} ({', '.join(h)})" for item, h in found[:12])
    return CheckResult(name, True, f"read {len(found)} file(s): {listed}" if found else "none in the image")
