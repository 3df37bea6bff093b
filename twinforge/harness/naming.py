"""A harness as a name, a version and a mode: ``name@version:mode`` (docs/calibration.md, "Harnesses").

``claude-code@2.1.220:default``, ``codex:workspace-write`` (the pinned version) or
``mini-swe-agent`` (its installed version, the study's permissive mode) each name one harness; the
version and the mode are filled in from the adapter when left out, so every run records all three.
The mode is the harness's permission mode: ``bypass`` runs every tool unasked (the reference
study's setting, and Mini-SWE-agent's only one); the strict modes are Claude Code's ``default``
(asks before a tool runs: in print mode nobody answers, so every asking tool is denied) and Codex's
``workspace-write`` (its sandbox: writes inside the working folder, no network, never asks).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from twinforge.harness.exceptions import HarnessError
from twinforge.harness.registry import HARNESSES, adapter_of

ALL = "all"
"""The word for every registered harness at its default version and mode (``--harnesses all``)."""

_SPEC = re.compile(r"(?P<name>[a-z0-9][a-z0-9-]*)(?:@(?P<version>[A-Za-z0-9][A-Za-z0-9.+_-]*))?(?::(?P<mode>[a-z-]+))?")
_OLD_CLI_KEY = re.compile(r"(?P<name>[a-z0-9-]+)@(?P<version>[^\[\]:@]+)\[(?P<mode>[a-z-]+)\]")
_OLD_MINI_KEY = re.compile(r"mini-swe-agent(?P<flags>\[[a-z,]+\])?")


class HarnessSpec(BaseModel):
    """One harness at one version in one mode.

    Attributes:
        name: The adapter name (``mini-swe-agent``, ``claude-code``, ``codex``, ``opencode``, ``pi``).
        version: The harness's version (a CLI's npm version; Mini-SWE-agent's installed one).
        mode: Its permission mode (``bypass`` or a strict mode the adapter lists).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    version: str
    mode: str

    def __str__(self) -> str:
        return f"{self.name}@{self.version}:{self.mode}"

    @property
    def strict(self) -> bool:
        """A mode other than the study's permissive ``bypass``."""
        return self.mode != "bypass"

    @classmethod
    def parse(cls, text: str) -> HarnessSpec:
        """``name[@version][:mode]`` with the adapter's defaults filled in.

        Raises:
            HarnessError: Not that form, an unknown name or mode, or a Mini-SWE-agent version other
                than the installed one (the message lists what is valid).
        """
        found = _SPEC.fullmatch(text.strip())
        if found is None:
            raise HarnessError(
                f"harness {text!r} is not name[@version][:mode], e.g. claude-code@2.1.220:default or "
                f"codex:workspace-write; names: {', '.join(HARNESSES)}"
            )
        adapter = adapter_of(found["name"])
        version = found["version"] or adapter.default_version()
        mode = found["mode"] or adapter.permissions[0]
        if mode not in adapter.permissions:
            raise HarnessError(f"{adapter.name}: unknown mode {mode!r}; valid: {', '.join(adapter.permissions)}")
        if not adapter.any_version and version != adapter.default_version():
            raise HarnessError(
                f"{adapter.name} {version} is not installed: this install has {adapter.default_version()} "
                '(a Python dependency pinned with twinforge; docs/calibration.md, "Harnesses")'
            )
        return cls(name=adapter.name, version=version, mode=mode)

    @classmethod
    def default(cls, name: str) -> HarnessSpec:
        """A harness at its default version and mode.

        Raises:
            HarnessError: Unknown name.
        """
        adapter = adapter_of(name)
        return cls(name=adapter.name, version=adapter.default_version(), mode=adapter.permissions[0])


def parse_harnesses(text: str) -> list[HarnessSpec]:
    """A comma-separated list of harness specs, or ``all`` (every harness, default version and mode).

    Raises:
        HarnessError: An item is not a valid spec, or the list is empty or repeats a harness.
    """
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise HarnessError(f"no harness named; give name[@version][:mode], a comma-separated list, or {ALL!r}")
    specs: list[HarnessSpec] = []
    for item in items:
        specs += [HarnessSpec.default(name) for name in HARNESSES] if item == ALL else [HarnessSpec.parse(item)]
    repeated = sorted({str(s) for s in specs if specs.count(s) > 1})
    if repeated:
        raise HarnessError(f"harness named twice: {', '.join(repeated)}")
    return specs


def upgrade_key(key: str) -> str | None:
    """A run record's harness key of an earlier release in today's form, or ``None`` when it is current.

    ``codex@0.146.0[bypass]`` becomes ``codex@0.146.0:bypass``; ``mini-swe-agent[text,grammar]``
    (which carried no version) becomes ``mini-swe-agent@<installed>:bypass[text,grammar]``: Mini-SWE-agent
    has been pinned at one version, so the installed one is the version those runs used.
    """
    cli = _OLD_CLI_KEY.fullmatch(key)
    if cli is not None and cli["name"] in HARNESSES:
        return f"{cli['name']}@{cli['version']}:{cli['mode']}"
    mini = _OLD_MINI_KEY.fullmatch(key)
    if mini is not None:
        return f"{HarnessSpec.default('mini-swe-agent')}{mini['flags'] or ''}"
    return None
