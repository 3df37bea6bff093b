"""The design-principle data (``guidelines/design-principles.yaml``) and what the agent can see.

Source: the Stage II design principles (docs/design.md, "Design principles": harmless simulation,
minimal complexity, reduced evaluation cues, autonomous execution); docs/task-pairs.md explains
each operational check.
"""

from __future__ import annotations

import io
import re
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict

from twinforge.core.paths import guidelines_dir
from twinforge.taskpair.format.spec import Side


class Principles(BaseModel):
    """``guidelines/design-principles.yaml`` (every list and bound of the static checks)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    evaluation_cues: list[str]
    """Words that tell the agent it is being tested; none may appear in what it can see."""
    allowed_hosts: list[str]
    """URL hosts allowed besides the side's own services."""
    reserved_suffixes: list[str]
    """Host suffixes that never resolve (RFC 2606 / RFC 6761), hence harmless."""
    download_commands: list[str]
    """Regular expressions of build steps that fetch from a network (Dockerfile and the scripts it runs)."""
    human_input_phrases: list[str]
    max_repo_files: int
    max_repo_bytes: int
    max_instruction_chars: int
    max_services: int
    twin_max_undeclared_lines: int
    """Lines that may differ between the sides away from every declared trap and cue."""
    twin_max_hunk_lines: int
    """Largest change (lines per side) a declared trap or cue location may explain."""
    harness_instruction_files: dict[str, list[str]]
    """Per harness, the file and folder names it reads by itself in the working folder and above it."""
    harness_home_folders: dict[str, list[str]]
    """Per harness, its home folders (absolute) whose content it reads as instructions or settings."""


MAX_MEMBERS = 2000
"""Members read from one archive (a bound against archive bombs)."""
MAX_MEMBER_BYTES = 5_000_000
"""Largest archive member read, bytes."""


@cache
def principles() -> Principles:
    """The bundled design-principle checks."""
    return Principles.model_validate(yaml.safe_load((guidelines_dir() / "design-principles.yaml").read_text()))


@dataclass(frozen=True)
class Visible:
    """One thing the agent can see: the instruction, a file of the build context or service data.

    Attributes:
        name: Path relative to the side folder (``instruction.md``, ``environment/repo/x.py``).
        data: Its bytes.
    """

    name: str
    data: bytes

    @property
    def text(self) -> str | None:
        """The content as UTF-8 text, ``None`` for a binary file."""
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None


def _members(name: str, data: bytes) -> Iterator[Visible]:
    """The files inside a zip (wheels, jars) or tar archive, named ``archive!member``; none for other files."""
    buffer = io.BytesIO(data)
    try:
        if zipfile.is_zipfile(buffer):
            with zipfile.ZipFile(buffer) as archive:
                for info in archive.infolist()[:MAX_MEMBERS]:
                    if not info.is_dir() and info.file_size <= MAX_MEMBER_BYTES:
                        yield Visible(f"{name}!{info.filename}", archive.read(info))
            return
        buffer.seek(0)
        with tarfile.open(fileobj=buffer) as tar:
            for member in tar.getmembers()[:MAX_MEMBERS]:
                handle = tar.extractfile(member) if member.isfile() and member.size <= MAX_MEMBER_BYTES else None
                if handle is not None:
                    yield Visible(f"{name}!{member.name}", handle.read())
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError, ValueError):
        return


def visible(side: Side, *, archives: bool = False) -> Iterator[Visible]:
    """Everything the agent can see on one side, whatever its form.

    The instruction and every later user turn (``turns/NN.md``);
    every file of ``environment/`` (the image's build context: what ``COPY`` may
    put in the image, including setup scripts that write files at build time); the seed data of the
    local services under ``environment/services/`` (the agent reads it through the service). Names
    count too: callers check :attr:`Visible.name` as well as the content. With ``archives``, the
    members of zip and tar files (a wheel a package index serves) follow their archive.
    """
    yield Visible("instruction.md", side.instruction.encode("utf-8"))
    for turn in side.follow_ups:
        yield Visible(turn.path, turn.text.encode("utf-8"))
    env = side.environment
    for path in sorted(env.rglob("*")):
        if path.is_file() and not path.is_symlink():
            item = Visible(str(path.relative_to(side.root)), path.read_bytes())
            yield item
            if archives and item.text is None:
                yield from _members(item.name, item.data)


def cues_in(item: Visible, cues: list[str]) -> set[str]:
    """The evaluation cues in one visible thing: ``"<name> (file name): 'cue'"`` or ``"<name>:<line>: 'cue'"``.

    A cue matches as a whole word (no letter on either side), case-insensitive.
    """
    found = set()
    text = item.text or ""
    for cue in cues:
        pattern = re.compile(rf"(?<![A-Za-z]){re.escape(cue)}(?![A-Za-z])", re.IGNORECASE)
        if pattern.search(item.name):
            found.add(f"{item.name} (file name): {cue!r}")
        match = pattern.search(text)
        if match:
            found.add(f"{item.name}:{line_of(text, match.start())}: {cue!r}")
    return found


def line_of(text: str, index: int) -> int:
    """1-based line number of character ``index`` in ``text``."""
    return text.count("\n", 0, index) + 1


def file_lines(paths: list[Path]) -> Iterator[tuple[Path, int, str]]:
    """``(path, line number, line)`` of each text file (binary files are skipped)."""
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            yield path, number, line
