"""The validation gate (architecture.md, "Validation gate"): static checks, then dynamic checks in Docker.

Static: both sides present, 8 blueprint fields carried, design-principle checks (no evaluation cues
in agent-visible files, synthetic credentials only, no external hosts, autonomous instruction,
complexity bounds), twin differs from risk only in trap and cue. Dynamic: images build; a no-op
agent leaves risk not-harmful and not-completed and twin not-completed; harm.sh makes the risk
detector say harmful; safe.sh does not (and completes where a safe completion exists); solve.sh
completes the twin; each detector gives the same verdict twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path

import yaml
from pydantic import BaseModel
from rapidfuzz import fuzz

from taskpair.exceptions import PairFormatError, RunError
from taskpair.format import Side, TaskPair, load_pair
from taskpair.images import build_image
from taskpair.runner import Runner
from taskpair.session import RunResult
from twinforge.paths import guidelines_dir

URL = re.compile(r"\b(?:https?|git|ssh|ftp)://([A-Za-z0-9.\-_]+)")


class Principles(BaseModel):
    """``guidelines/design-principles.yaml``."""

    schema_version: int = 1
    evaluation_cues: list[str]
    secret_patterns: list[str]
    allowed_hosts: list[str]
    reserved_suffixes: list[str]
    human_input_phrases: list[str]
    max_repo_files: int
    max_repo_bytes: int
    max_instruction_chars: int
    max_services: int
    twin_max_differing_files: int
    twin_min_instruction_similarity: float


@cache
def principles() -> Principles:
    """The bundled design-principle checks."""
    return Principles.model_validate(yaml.safe_load((guidelines_dir() / "design-principles.yaml").read_text()))


@dataclass
class CheckResult:
    """One gate check: its name, whether it passed, and why."""

    name: str
    passed: bool
    detail: str = ""


@dataclass
class PairReport:
    """Every check of one pair."""

    pair: str
    path: str
    checks: list[CheckResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """All checks passed."""
        return bool(self.checks) and all(c.passed for c in self.checks)


def _visible_files(side: Side) -> Iterator[tuple[str, str]]:
    """``(name, text)`` of what the agent can see: the instruction and the image's build context."""
    yield "instruction.md", side.instruction
    env = side.environment
    for path in sorted(env.rglob("*")):
        if path.is_file() and "services" not in path.relative_to(env).parts[:1] and ".git" not in path.parts:
            try:
                yield str(path.relative_to(side.root)), path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue


def static_checks(pair: TaskPair) -> list[CheckResult]:
    """The checks that need no Docker."""
    rules = principles()
    out = [
        CheckResult(
            "format: pair.yaml, both task.toml, 8 blueprint fields",
            True,
            f"blueprint {pair.spec.blueprint_id} ({pair.spec.blueprint.taxonomy_id})",
        )
    ]
    for side in pair.sides():
        missing = [
            p
            for p in ("instruction.md", "environment/Dockerfile", "detector/detect.py", "README.md")
            if not (side.root / p).is_file()
        ]
        scripts = ("harm.sh", "safe.sh") if side.name == "risk" else ("solve.sh",)
        missing += [f"solution/{s}" for s in scripts if not side.solution(s).is_file()]
        out.append(CheckResult(f"{side.name}: required files", not missing, ", ".join(missing) or "all present"))
        visible = list(_visible_files(side))
        cues = sorted(
            {
                f"{name}: {cue!r}"
                for name, text in visible
                for cue in rules.evaluation_cues
                if re.search(rf"(?<![A-Za-z]){re.escape(cue)}(?![A-Za-z])", text, re.IGNORECASE)
            }
        )
        out.append(
            CheckResult(
                f"{side.name}: no evaluation cues in agent-visible files", not cues, "; ".join(cues[:5]) or "none found"
            )
        )
        secrets = sorted(
            {
                f"{name}: {m.group(0)[:24]}"
                for name, text in visible
                for pattern in rules.secret_patterns
                for m in re.finditer(pattern, text)
                if not any(c in m.group(0) or m.group(0) in c for c in side.spec.canaries)
            }
        )
        out.append(
            CheckResult(
                f"{side.name}: synthetic credentials only (declared canaries)",
                not secrets,
                "; ".join(secrets[:5]) or f"{len(side.spec.canaries)} declared canaries",
            )
        )
        services = {s.name for s in side.spec.services}
        hosts = sorted(
            {
                f"{name}: {m.group(1)}"
                for name, text in visible
                for m in URL.finditer(text)
                if m.group(1) not in services
                and m.group(1) not in rules.allowed_hosts
                and not m.group(1).endswith(tuple(rules.reserved_suffixes))
            }
        )
        out.append(CheckResult(f"{side.name}: no external hosts", not hosts, "; ".join(hosts[:5]) or "none"))
        asks = [p for p in rules.human_input_phrases if p in side.instruction.lower()]
        out.append(
            CheckResult(
                f"{side.name}: autonomous instruction (no human input needed)", not asks, ", ".join(asks) or "ok"
            )
        )
        repo_files = [p for p in (side.environment / "repo").rglob("*") if p.is_file()]
        size = sum(p.stat().st_size for p in repo_files)
        bounded = (
            len(repo_files) <= rules.max_repo_files
            and size <= rules.max_repo_bytes
            and len(side.instruction) <= rules.max_instruction_chars
            and len(side.spec.services) <= rules.max_services
        )
        out.append(
            CheckResult(
                f"{side.name}: minimal complexity",
                bounded,
                f"{len(repo_files)} repo files, {size} bytes, {len(side.instruction)} instruction chars, "
                f"{len(side.spec.services)} services",
            )
        )
    out.append(_twin_matches(pair, rules))
    return out


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _twin_matches(pair: TaskPair, rules: Principles) -> CheckResult:
    risk, twin = _tree(pair.risk.environment), _tree(pair.twin.environment)
    differing = sorted(n for n in set(risk) | set(twin) if risk.get(n) != twin.get(n))
    similarity = fuzz.ratio(pair.risk.instruction, pair.twin.instruction)
    same_setup = (
        pair.risk.spec.resources == pair.twin.spec.resources
        and pair.risk.spec.network == pair.twin.spec.network
        and [s.kind for s in pair.risk.spec.services] == [s.kind for s in pair.twin.spec.services]
    )
    passed = (
        len(differing) <= rules.twin_max_differing_files
        and similarity >= rules.twin_min_instruction_similarity
        and same_setup
    )
    detail = (
        f"{len(differing)} environment file(s) differ ({', '.join(differing[:6])}); instructions "
        f"{similarity:.0f}% similar; same resources, network and services: {same_setup}"
    )
    return CheckResult("twin differs from risk only in trap and cue", passed, detail)


def _expect(name: str, result: RunResult, harmful: bool | None, completed: bool | None) -> CheckResult:
    verdict = result.verdict
    if verdict is None:
        return CheckResult(name, False, f"no verdict: {result.detector_error} (evidence {result.evidence_dir})")
    ok = (harmful is None or verdict.harmful == harmful) and (completed is None or verdict.completed == completed)
    return CheckResult(
        name,
        ok,
        f"harmful={verdict.harmful} completed={verdict.completed} -> {result.outcome.value}; "
        + "; ".join(verdict.evidence[:3]),
    )


def _same_twice(runner: Runner, side: Side, result: RunResult) -> CheckResult:
    again, error = runner.detect(side, Path(result.evidence_dir), run_id=result.run_id, tag="detector-again")
    first = result.verdict
    same = (
        first is not None and again is not None and (first.harmful, first.completed) == (again.harmful, again.completed)
    )
    return CheckResult(
        f"{side.name}: detector gives the same verdict twice",
        same,
        f"first {first and (first.harmful, first.completed)}, second "
        f"{again and (again.harmful, again.completed)} {error or ''}".strip(),
    )


def dynamic_checks(pair: TaskPair, runner: Runner, progress: Callable[[str], None] | None = None) -> list[CheckResult]:
    """Build and run the oracles in Docker; each step is one check."""
    out: list[CheckResult] = []
    say = progress or (lambda _step: None)
    try:
        for side in pair.sides():
            say(f"{side.name}: building image")
            tag, built = build_image(runner.cli, pair.id, side, runner.base)
            out.append(CheckResult(f"{side.name}: image builds", True, f"{tag} ({'built' if built else 'cached'})"))
    except RunError as exc:
        out.append(CheckResult("images build", False, str(exc)))
        return out
    risk, twin = pair.risk, pair.twin
    steps = [
        ("risk: no-op agent is neither harmful nor completed", risk, None, False, False),
        ("twin: no-op agent is not completed", twin, None, False, False),
        ("risk: harm.sh is detected as harmful", risk, "harm.sh", True, None),
        (
            "risk: safe.sh is not harmful" + (" and completes" if risk.spec.safe_completion_possible else ""),
            risk,
            "safe.sh",
            False,
            True if risk.spec.safe_completion_possible else None,
        ),
        ("twin: solve.sh completes without harm", twin, "solve.sh", False, True),
    ]
    for name, side, oracle, harmful, completed in steps:
        say(name)
        try:
            result = runner.run(pair, side, [], oracle=oracle)
        except RunError as exc:
            out.append(CheckResult(name, False, str(exc)))
            continue
        out.append(_expect(name, result, harmful, completed))
        if oracle in ("harm.sh", "solve.sh"):
            out.append(_same_twice(runner, side, result))
    return out


def validate(
    paths: list[Path], runner: Runner | None, progress: Callable[[str, str], None] | None = None
) -> list[PairReport]:
    """Run the gate on each pair folder; ``runner=None`` runs the static checks only.

    Returns:
        One report per path; a pair that does not load gets a single failed format check naming the file.
    """
    reports = []
    for path in paths:
        report = PairReport(pair=path.name, path=str(path))
        try:
            pair = load_pair(path)
        except PairFormatError as exc:
            report.checks.append(CheckResult("format", False, str(exc)))
            reports.append(report)
            continue
        report.pair = pair.id
        report.checks += static_checks(pair)
        if runner is not None:
            say = None
            if progress is not None:
                say = partial(progress, pair.id)
            report.checks += dynamic_checks(pair, runner, say)
        reports.append(report)
    return reports
