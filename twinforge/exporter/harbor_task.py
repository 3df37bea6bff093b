"""One side of a pair as a Harbor task (harbor 0.26's task layout and ``task.toml`` schema 1.4).

```
<pair>-<side>/
  instruction.md      the side's instruction, verbatim (a multi-turn side: every user turn in order)
  task.toml           Harbor's TaskConfig: budgets, resources, separate verifier, artifacts, metadata
  README.md           the side's README and what the export changed
  environment/        the side's build context, ``ARG BASE`` defaulted to the base image tag,
                      docker-compose.yaml (harbor_compose) and twinforge-services/ for its services
  tests/              the separate verifier: a copy of the build context whose Dockerfile adds
                      twinforge-verifier/ (verifier.py: state root, verdict channel, sandbox as
                      nobody, rewards; the side's detector/; the twinforge_detectors library),
                      docker-compose.yaml without network, test.sh
  solution/           the side's oracles; solve.sh is the one Harbor's oracle agent runs
```

Sources: harbor 0.26 ``harbor/models/task/config.py`` (TaskConfig, VerifierConfig.environment_mode,
ArtifactConfig), ``harbor/models/task/paths.py`` (layout), ``harbor/trial/single_step.py`` (separate
mode stops the agent's containers before the verifier starts) and ``harbor/verifier/verifier.py``
(``/logs/verifier/reward.json`` holds named rewards).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import tomli_w
import yaml

from twinforge.exporter.exceptions import ExportError
from twinforge.exporter.harbor_compose import (
    BASELINE_ROOT,
    BASELINE_SERVICE,
    RESERVED,
    SERVICE_DIR,
    SERVICE_LOG_ROOT,
    compose_file,
    verifier_compose_file,
)
from twinforge.exporter.rendering import render
from twinforge.taskpair.format.spec import Side, TaskPair
from twinforge.taskpair.in_container import DETECTOR_MOUNT, DETECTOR_PACKAGE
from twinforge.taskpair.runtime.service_kinds import MOUNT as SERVICES_MOUNT
from twinforge.taskpair.runtime.service_kinds import PROGRAMS, SERVICES

HARBOR_SCHEMA = "1.4"
ORG = "twinforge"
VERIFIER_DIR = "twinforge-verifier"
"""Folder under ``tests/`` with the verifier program, the detector and the detector library."""
STATE_ROOT = "/twinforge/state"
"""Where the verifier gathers the collected paths for the detector (its ``/state``)."""
VERIFIER_MARGIN_S = 120.0
"""Seconds added to the detector's own limit for Harbor's verifier: image start and artifact upload."""
_ARG_BASE = re.compile(r"^ARG BASE\s*$", re.MULTILINE)
# Paths the verifier image itself needs: a collect path that equals or contains one of them
# cannot be re-created at its own path there.
_VERIFIER_NEEDS = (
    "/bin", "/sbin", "/lib", "/lib64", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib64", "/usr/share",
    "/etc/passwd", "/etc/group", "/etc/ssl", "/tmp", "/logs", "/tests", "/detector", "/opt/twinforge",
    "/twinforge", SERVICE_LOG_ROOT, "/proc", "/sys", "/dev", "/run/twinforge", "/in",
)  # fmt: skip


def task_name(pair: TaskPair, side: Side) -> str:
    """Harbor's ``org/name`` of one side, e.g. ``twinforge/ref-r2-env-example-risk``."""
    return f"{ORG}/{pair.id}-{side.name}"


def unexportable(pair: TaskPair) -> str | None:
    """Why Harbor cannot hold ``pair`` as it is, or ``None``: a collect path its verifier needs.

    Harbor's verifier re-creates each collected path at its own place (docs/design.md, "Export to
    Harbor"); a path that is or holds one the verifier image needs (``/etc`` holds ``/etc/passwd``,
    which R4's persistence pairs collect whole) cannot be. Such a pair is skipped by ``export`` and
    named with this reason.
    """
    for side in pair.sides():
        for path in side.spec.detector.collect:
            needed = _verifier_need(path)
            if needed is not None:
                return f"{side.name}: detector.collect path {path!r} overlaps {needed}, which Harbor's verifier needs"
    return None


def _verifier_need(path: str) -> str | None:
    """The path the verifier image needs that ``path`` is, holds or lies in; ``None``: no overlap."""
    clean = "/" + path.strip("/")
    for needed in _VERIFIER_NEEDS:
        if clean == "/" or needed == clean or needed.startswith(clean + "/") or clean.startswith(needed + "/"):
            return needed
    return None


def _check(pair: TaskPair, side: Side) -> None:
    where = f"{pair.id}/{side.name}/task.toml"
    for service in side.spec.services:
        if service.name in RESERVED:
            raise ExportError(f"{where}: service name {service.name!r} is reserved in the export; rename it")
    for path in side.spec.detector.collect:
        if not path.startswith("/"):
            raise ExportError(f"{where}: detector.collect path {path!r} is not absolute")
        needed = _verifier_need(path)
        if needed is not None:
            raise ExportError(
                f"{where}: detector.collect path {path!r} overlaps {needed}, which Harbor's verifier needs; "
                "collect a narrower path"
            )
    if not (side.environment / "Dockerfile").is_file():
        raise ExportError(f"{pair.id}/{side.name}: environment/Dockerfile is missing")


def _oracle(side: Side, risk_oracle: str) -> Path:
    name = "solve.sh" if side.name == "twin" else f"{risk_oracle}.sh"
    script = side.solution(name)
    if not script.is_file():
        raise ExportError(f"{side.root}: solution/{name} is missing")
    return script


def task_config(pair: TaskPair, side: Side, *, base: str) -> dict[str, Any]:
    """The ``task.toml`` mapping in Harbor's schema (validated against Harbor's TaskConfig by the tests)."""
    spec = side.spec
    bp = pair.spec.blueprint
    artifacts: list[dict[str, str]] = [{"source": path} for path in spec.detector.collect]
    artifacts += [{"source": f"{SERVICE_LOG_ROOT}/{s.name}", "service": s.name} for s in spec.services]
    artifacts.append({"source": BASELINE_ROOT, "service": BASELINE_SERVICE})
    return {
        "schema_version": HARBOR_SCHEMA,
        "task": {
            "name": task_name(pair, side),
            "description": f"{pair.spec.title} ({side.name} side, {bp.taxonomy_id})",
            "keywords": [ORG, bp.taxonomy_id, bp.source, bp.risk, side.name],
        },
        "metadata": {
            "twinforge": {
                "pair": pair.id,
                "side": side.name,
                "blueprint_id": pair.spec.blueprint_id,
                "taxonomy_id": bp.taxonomy_id,
                "safe_completion_possible": spec.safe_completion_possible,
                "model_calls": spec.agent.model_calls,
                "command_timeout_s": spec.agent.command_timeout_s,
                "base_image": base,
                "rewards": "reward.json: completed (goal reached) and harmful (prohibited effect), 0 or 1",
            }
        },
        "verifier": {
            "environment_mode": "separate",
            "timeout_sec": spec.detector.timeout_s + VERIFIER_MARGIN_S,
            "environment": {"cpus": 1, "memory_mb": 1024},
        },
        "agent": {"timeout_sec": spec.agent.turn_timeout_s},
        "environment": {
            "cpus": spec.resources.cpus,
            "memory_mb": spec.resources.memory_mb,
            "workdir": spec.workdir,
        },
        "artifacts": artifacts,
    }


def _write(path: Path, text: str, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if mode is not None:
        path.chmod(mode)


def _with_base(dockerfile: str, base: str) -> str:
    """The Dockerfile with ``ARG BASE`` defaulted to the base image tag (twinforge passes it as a build arg)."""
    return _ARG_BASE.sub(f"ARG BASE={base}", dockerfile, count=1)


def _environment(side: Side, target: Path, base: str) -> None:
    shutil.copytree(side.environment, target, symlinks=True)
    dockerfile = target / "Dockerfile"
    dockerfile.write_text(_with_base(dockerfile.read_text(encoding="utf-8"), base), encoding="utf-8")
    _write(target / "docker-compose.yaml", yaml.safe_dump(compose_file(side.spec), sort_keys=False))
    if not side.spec.services:
        return
    shutil.copytree(PROGRAMS, target / SERVICE_DIR / "programs", ignore=shutil.ignore_patterns("__pycache__"))
    for service in side.spec.services:
        if service.data and not (side.environment / "services" / service.data).is_dir():
            raise ExportError(f"{side.root}: service {service.name}: data folder services/{service.data} is missing")
        program = SERVICES[service.kind]
        _write(
            target / SERVICE_DIR / f"{service.name}.Dockerfile",
            render(
                "service.Dockerfile.j2",
                name=service.name,
                kind=service.kind,
                description=program.description,
                base=base,
                service_dir=SERVICE_DIR,
                programs_mount=SERVICES_MOUNT,
                data=service.data,
                log_dir=f"{SERVICE_LOG_ROOT}/{service.name}",
                command=json.dumps(list(program.command)),
            ),
        )


def _tests(pair: TaskPair, side: Side, target: Path, base: str) -> None:
    spec = side.spec.detector
    shutil.copytree(side.environment, target, symlinks=True)
    own = target / VERIFIER_DIR
    shutil.copytree(side.detector_dir, own / "detector", symlinks=False)
    shutil.copytree(
        DETECTOR_PACKAGE, own / DETECTOR_PACKAGE.name, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
    )
    config = {
        "pair": pair.id,
        "side": side.name,
        "collect": ["/" + p.strip("/") for p in spec.collect],
        "command": list(spec.command),
        "timeout": spec.timeout_s,
        "state": STATE_ROOT,
        "baseline": BASELINE_ROOT,
        "logs": SERVICE_LOG_ROOT,
        "library": DETECTOR_MOUNT,
    }
    dockerfile = _with_base((target / "Dockerfile").read_text(encoding="utf-8"), base)
    appended = render(
        "verifier.Dockerfile.j2",
        collect=" ".join(shlex.quote("/" + p.strip("/")) for p in spec.collect),
        library_mount=DETECTOR_MOUNT,
    )
    _write(target / "Dockerfile", dockerfile.rstrip("\n") + "\n" + appended)
    _write(target / "docker-compose.yaml", yaml.safe_dump(verifier_compose_file(), sort_keys=False))
    _write(target / "test.sh", render("test.sh.j2"), 0o755)
    _write(own / "test.sh", render("test.sh.j2"), 0o755)
    _write(own / "verifier.py", render("verifier.py.j2", config=repr(config)))


def write_task(pair: TaskPair, side: Side, out: Path, *, base: str, risk_oracle: str = "safe") -> Path:
    """Write one side as a Harbor task folder ``out/<pair>-<side>``; returns it.

    Args:
        pair: The loaded pair.
        side: Its risk or twin side.
        out: The export folder.
        base: Tag of the base image the Dockerfiles start ``FROM`` (``twinforge env setup`` builds it).
        risk_oracle: ``safe`` or ``harm``: which risk oracle becomes ``solution/solve.sh``.

    Raises:
        ExportError: A reserved service name, a collect path the verifier needs, a missing file.
    """
    _check(pair, side)
    oracle = _oracle(side, risk_oracle)
    target = out / f"{pair.id}-{side.name}"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    # links are copied as links, never followed (load_pair refuses links out of the pair)
    shutil.copy2(side.root / "instruction.md", target / "instruction.md", follow_symlinks=False)
    if side.follow_ups:
        _write(target / "instruction.md", joined_instruction(side))
    readme = side.root / "README.md"
    notes = render("task-readme.md.j2", pair=pair.id, side=side.name, oracle=oracle.name, base=base)
    _write(target / "README.md", (readme.read_text(encoding="utf-8") if readme.is_file() else "") + notes)
    _write(target / "task.toml", tomli_w.dumps(task_config(pair, side, base=base)))
    _environment(side, target / "environment", base)
    _tests(pair, side, target / "tests", base)
    shutil.copytree(side.root / "solution", target / "solution", symlinks=True)
    (target / "solution" / "solve.sh").unlink(missing_ok=True)
    shutil.copyfile(oracle.resolve(strict=True), target / "solution" / "solve.sh")
    (target / "solution" / "solve.sh").chmod(0o755)
    if side.follow_ups:
        (target / "solution" / "solve.sh").rename(target / "solution" / TURN_ORACLE)
        _write(target / "solution" / "solve.sh", render("turns-solve.sh.j2", turns=side.user_turns), 0o755)
    return target


TURN_ORACLE = "solve-turn.sh"
"""A multi-turn side's oracle in the export, called once per user turn with the turn's number."""


def joined_instruction(side: Side) -> str:
    """Every user turn of a side in one instruction, in order (Harbor's task has one)."""
    return "\n\n".join(side.turn_text(n).rstrip("\n") for n in range(1, side.user_turns + 1)) + "\n"
