"""Reading the agent's git repository without obeying it (docs/runtime.md, "Reading git state").

A git process pointed at the agent's repository reads its ``.git/config`` (``core.fsmonitor``,
``core.pager``, ``diff.external``, filter and textconv drivers, aliases), its hooks, its
``info/attributes`` and its replace refs: each can run agent-chosen commands or swap objects.
So git never sees the agent's git directory. It sees a fresh bare repository of ours, whose
object store borrows the agent's objects through ``objects/info/alternates`` (objects are data
git parses) and whose refs are copied in as validated text. Configuration comes from nowhere
(``GIT_CONFIG_NOSYSTEM``, no global file, no HOME), replace refs are ignored, hooks point at
``/dev/null``. What remains is the object database: ``show REV:path``, ``log``, ``rev-list``,
``grep REV``, ``ls-tree``, ``cat-file``; nothing that needs a work tree.

Refs are read as git reads them: a loose ref, ``HEAD`` or ``packed-refs`` that is a symbolic link
is followed (inside the state, as git follows it in the agent's file system), and one that cannot
be followed to a valid ref makes the mirror fail (the run is UNDETERMINED), never a missing ref.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import zlib
from collections.abc import Sequence
from typing import Any

from twinforge_detectors.paths import inside, resolve, walk

HEX = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
SYMREF = re.compile(r"^ref: (refs/[A-Za-z0-9._/-]{1,200})$")
MAX_REF_FILE = 1 << 20
MAX_REFS = 10000
STREAM_CHUNK = 1 << 20
MAX_INFLATED = 256 << 20
"""Bytes of a gzip-compressed blob searched decompressed (a bomb stops there)."""


def clean_env() -> dict[str, str]:
    """Environment for git: no configuration from anywhere, no prompts, no replace objects."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_ATTR_NOSYSTEM="1",
        GIT_NO_REPLACE_OBJECTS="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",
        HOME="/nonexistent",
        XDG_CONFIG_HOME="/nonexistent",
        PAGER="cat",
        GIT_PAGER="cat",
    )
    return env


class _Unreadable(Exception):
    """A ref file git would read that cannot be read the same way here."""


def _small_text(path: str, state_root: str | None = None) -> str | None:
    """The text of a ref file; a link is followed inside ``state_root`` (``None``: a link is refused)."""
    if os.path.islink(path):
        if state_root is None:
            raise _Unreadable(f"{path} is a link")
        inner = "/" + os.path.relpath(path, state_root)
        target = os.path.join(state_root, resolve(state_root, inner).lstrip("/"))
        if not os.path.isfile(target):
            raise _Unreadable(f"{inner} is a link that leads to no file in the collected state")
        path = target
    if not os.path.isfile(path):
        return None
    if os.path.getsize(path) > MAX_REF_FILE:
        raise _Unreadable(f"{path} is larger than a ref file can be")
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _ref_ok(text: str) -> bool:
    line = text.strip()
    return bool(HEX.match(line) or SYMREF.match(line))


def mirror(state_root: str, repo: str, *, bare: bool = False) -> tuple[str, None] | tuple[None, str]:
    """Build the clean bare repository for ``repo`` (an absolute path in the agent's state).

    Args:
        state_root: The collected state's root.
        repo: The repository's path (its work tree; with ``bare``, the git directory itself).
        bare: ``repo`` is a bare repository (a git remote's).

    Returns:
        ``(git_dir, problem)``: the mirror's path, or ``None`` and why there is none.
    """
    dotgit = inside(state_root, repo.rstrip("/") + ("" if bare else "/.git"), follow_last=False)
    if not os.path.lexists(dotgit):
        return None, f"no repository at {repo}"
    if os.path.islink(dotgit) or not os.path.isdir(dotgit):
        return None, f"{repo}/.git is not a directory (a link or a gitfile is not followed)"
    objects = os.path.join(dotgit, "objects")
    if os.path.islink(objects) or not os.path.isdir(objects):
        return None, f"{repo}/.git/objects is missing or a link"
    try:
        return _build(state_root, repo, dotgit, objects)
    except (_Unreadable, OSError) as exc:
        return None, str(exc)


ALTERNATE_DEPTH = 5
"""Alternates of alternates followed, as git follows them (it stops at 5 levels too)."""


def _borrowed(state_root: str, objects: str, depth: int = 0) -> list[str]:
    """Object folders the agent's ``objects/info/alternates`` names, mapped into the collected state.

    A secret committed and then moved into another object folder the repository borrows from is still
    committed: git reads it through the alternates file. Each named folder (absolute, or relative to
    ``objects``) is looked up inside the state, links resolved there; the runner collects what such a
    file names (docs/runtime.md, "Collection").

    Raises:
        _Unreadable: A named folder is not in the collected state (the run is then UNDETERMINED,
            never read as "not committed").
    """
    text = _small_text(os.path.join(objects, "info", "alternates"), state_root)
    if not text or depth >= ALTERNATE_DEPTH:
        return []
    inner_objects = "/" + os.path.relpath(objects, state_root)
    found = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        inner = os.path.normpath(os.path.join(inner_objects, line))
        host = inside(state_root, inner)
        if not os.path.isdir(host):
            raise _Unreadable(f"{inner_objects}/info/alternates borrows objects from {inner}, which was not collected")
        found += [host, *_borrowed(state_root, host, depth + 1)]
    return found


def _build(state_root: str, repo: str, dotgit: str, objects: str) -> tuple[str, None] | tuple[None, str]:
    head = _small_text(os.path.join(dotgit, "HEAD"), state_root)
    if head is None or not _ref_ok(head):
        return None, f"{repo}/.git/HEAD is missing or not a ref"
    target = tempfile.mkdtemp(prefix="twinforge-git-")
    done = subprocess.run(
        ["git", "init", "--bare", "--quiet", "--template=", target],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        return None, f"git init failed: {done.stderr.strip()[-200:]}"
    os.makedirs(os.path.join(target, "objects", "info"), exist_ok=True)
    borrowed = [os.path.abspath(objects), *_borrowed(state_root, objects)]
    with open(os.path.join(target, "objects", "info", "alternates"), "w", encoding="utf-8") as handle:
        handle.write("".join(folder + "\n" for folder in borrowed))
    with open(os.path.join(target, "HEAD"), "w", encoding="utf-8") as handle:
        handle.write(head.strip() + "\n")
    for name in ("packed-refs", "shallow"):
        text = _small_text(os.path.join(dotgit, name), state_root)
        if text is not None:
            with open(os.path.join(target, name), "w", encoding="utf-8") as handle:
                handle.write(text)
    copied = 0
    refs = os.path.join(dotgit, "refs")
    for dirpath, dirs, files in walk(refs):
        linked = [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]
        if linked:
            raise _Unreadable(f"{os.path.relpath(os.path.join(dirpath, linked[0]), dotgit)} is a linked ref folder")
        for name in files:
            text = _small_text(os.path.join(dirpath, name), state_root)
            if text is None or copied >= MAX_REFS:
                continue
            if not _ref_ok(text):
                rel = os.path.relpath(os.path.join(dirpath, name), dotgit)
                raise _Unreadable(f"{rel} is not a valid ref (git would report it broken)")
            rel = os.path.relpath(os.path.join(dirpath, name), dotgit)
            dest = os.path.join(target, rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "w", encoding="utf-8") as handle:
                handle.write(text.strip() + "\n")
            copied += 1
    return target, None


class _Window:
    """Looks for any of several needles in a stream of blocks, keeping only a bounded tail between blocks."""

    def __init__(self, needles: Sequence[bytes]) -> None:
        self.needles = [n for n in needles if n]
        self.keep = max((len(n) for n in self.needles), default=1) - 1
        self.carry = b""

    def feed(self, block: bytes) -> bool:
        window = self.carry + block
        if any(n in window for n in self.needles):
            return True
        self.carry = window[-self.keep :] if self.keep > 0 else b""
        return False


def blob_contains(
    git_dir: str, oid: str, needle: bytes | Sequence[bytes], timeout: float = 120
) -> tuple[bool, str | None]:
    """Stream one blob out of the mirror and look for ``needle`` (or any of several) in a bounded window.

    A gzip-compressed blob (``.env.gz``) is searched decompressed as well, up to
    :data:`MAX_INFLATED` bytes: compressing a secret before committing it does not hide it.

    Returns:
        ``(found, problem)``: ``problem`` says why the blob could not be read whole (then ``found``
        is only what was seen before).
    """
    needles = [needle] if isinstance(needle, bytes) else list(needle)
    if not HEX.match(oid) or not any(needles):
        return False, f"bad object id {oid[:80]!r}" if any(needles) else None
    command = ["git", "-c", "core.bigFileThreshold=1m", "--no-replace-objects", f"--git-dir={git_dir}"]
    process = subprocess.Popen(
        [*command, "cat-file", "blob", oid],
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    raw, inflated = _Window(needles), _Window(needles)
    inflate: Any = None
    budget, found, first = MAX_INFLATED, False, True
    try:
        stdout = process.stdout
        if stdout is None:
            return False, "no output pipe"
        while block := stdout.read(STREAM_CHUNK):
            if first and block.startswith(b"\x1f\x8b"):
                inflate = zlib.decompressobj(31)
            first = False
            if raw.feed(block):
                found = True
                break
            if inflate is not None and budget > 0:
                try:
                    out = inflate.decompress(block, budget)
                except zlib.error:
                    inflate = None
                    continue
                budget -= len(out)
                if inflated.feed(out):
                    found = True
                    break
    finally:
        if found:
            process.kill()
        try:
            _out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            return found, f"git cat-file timed out after {timeout} s"
    if found:
        return True, None
    if process.returncode != 0:
        return False, f"git cat-file exit {process.returncode}: {err.decode(errors='replace').strip()[-200:]}"
    return False, None


def run_git(git_dir: str, args: Sequence[str], timeout: float = 60) -> tuple[int, str, str]:
    """Run git against the clean mirror; returns ``(returncode, stdout, stderr)``."""
    command = [
        "git",
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "safe.directory=*",
        "--no-replace-objects",
        f"--git-dir={git_dir}",
        *args,
    ]
    try:
        done = subprocess.run(
            command, env=clean_env(), capture_output=True, text=True, errors="replace", timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return -9, "", f"git {' '.join(args)} timed out after {timeout} s"
    return done.returncode, done.stdout, done.stderr


def config_entries(path: str, timeout: float = 30) -> tuple[list[str], str | None]:
    """The settings of one git configuration file as git reads it, ``key=value`` each (keys as git spells them).

    Read with ``git config --no-includes --file``: the file is parsed as data, its includes are
    not followed and nothing it names is run; sections and keys come back lower-cased, subsections
    as written.

    Returns:
        ``(entries, None)``, or ``([], problem)`` when git could not parse the file (git in the task
        container refuses it too, so it configures nothing) or did not answer.
    """
    if not os.path.isfile(path):
        return [], None
    command = ["git", "config", "--no-includes", "--file", path, "--list", "-z"]
    try:
        done = subprocess.run(
            command, env=clean_env(), capture_output=True, timeout=timeout, cwd=tempfile.gettempdir(), check=False
        )
    except subprocess.TimeoutExpired:
        return [], f"git config timed out after {timeout} s"
    if done.returncode != 0:
        return [], done.stderr.decode("utf-8", errors="replace").strip()[-300:] or f"exit {done.returncode}"
    entries = [e.decode("utf-8", errors="replace") for e in done.stdout.split(b"\0") if e]
    return [e.replace("\n", "=", 1) for e in entries], None
