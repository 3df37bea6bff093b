"""The static half of the gate: checks that need no Docker (docs/task-pairs.md, "Static checks")."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from pathlib import Path

from twinforge.taskpair.format.spec import SCAFFOLD_MARK, Side, TaskPair
from twinforge.taskpair.gate import credentials, declared, downloads, locations
from twinforge.taskpair.gate.principles import Principles, cues_in, principles, visible
from twinforge.taskpair.gate.report import CheckResult

URL = re.compile(r"\b(?:https?|git|ssh|ftp)://([A-Za-z0-9.\-_]+)")


def _placeholder(path: Path) -> str | None:
    """``"not implemented yet[: what to fill in]"`` for a file that still holds the scaffold mark, else ``None``."""
    data = path.read_bytes()
    if SCAFFOLD_MARK.encode() not in data:
        return None
    line = next(x for x in data.decode("utf-8", errors="replace").splitlines() if SCAFFOLD_MARK in x)
    rest = line.split(SCAFFOLD_MARK, 1)[1].strip(" :-#*/>'\"\t")
    return "not implemented yet" + (f": {rest}" if rest else "")


def scaffold_left(pair: TaskPair) -> CheckResult:
    """Every file the ``new-pair`` scaffold left for the author is filled in (no placeholder remains).

    Each file still holding :data:`~twinforge.taskpair.format.spec.SCAFFOLD_MARK` is named, with what its marked line
    says to fill in.
    """
    left = []
    for path in sorted(pair.root.rglob("*")):
        if path.is_file() and (what := _placeholder(path)) is not None:
            left.append(f"{path.relative_to(pair.root)}: {what}")
    return CheckResult("implemented: no scaffold placeholders left", not left, "; ".join(left) or "none")


def _required(side: Side) -> CheckResult:
    missing = [
        p
        for p in ("instruction.md", "environment/Dockerfile", "detector/detect.py", "README.md")
        if not (side.root / p).is_file()
    ]
    scripts = ("harm.sh", "safe.sh") if side.name == "risk" else ("solve.sh",)
    missing += [f"solution/{s}" for s in scripts if not side.solution(s).is_file()]
    return CheckResult(f"{side.name}: required files", not missing, ", ".join(missing) or "all present")


def _cues(side: Side, rules: Principles) -> CheckResult:
    found = set()
    for item in visible(side, archives=True):
        found |= cues_in(item, rules.evaluation_cues)
    cues = sorted(found)
    return CheckResult(
        f"{side.name}: no evaluation cues in anything the agent can see",
        not cues,
        "; ".join(cues[:8]) or "none found",
    )


def _hosts(side: Side, rules: Principles) -> CheckResult:
    services = {s.name for s in side.spec.services}
    texts = [(item.name, item.text or "") for item in visible(side)]
    texts += [
        (str(path.relative_to(side.root)), path.read_text(encoding="utf-8", errors="replace"))
        for path in sorted((side.root / "solution").glob("*"))
        if path.is_file()
    ]
    hosts = sorted(
        {
            f"{name}: {m.group(1)}"
            for name, text in texts
            for m in URL.finditer(text)
            if m.group(1) not in services
            and m.group(1) not in rules.allowed_hosts
            and not m.group(1).endswith(tuple(rules.reserved_suffixes))
        }
    )
    return CheckResult(f"{side.name}: no external hosts", not hosts, "; ".join(hosts[:5]) or "none")


def _autonomous(side: Side, rules: Principles) -> CheckResult:
    texts = [side.turn_text(n).lower() for n in range(1, side.user_turns + 1)]
    asks = sorted({p for p in rules.human_input_phrases for text in texts if p in text})
    return CheckResult(
        f"{side.name}: autonomous instruction (no human input needed)", not asks, ", ".join(asks) or "ok"
    )


def _complexity(side: Side, rules: Principles) -> CheckResult:
    repo_files = [p for p in (side.environment / "repo").rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in repo_files)
    longest = max(len(side.turn_text(n)) for n in range(1, side.user_turns + 1))
    bounded = (
        len(repo_files) <= rules.max_repo_files
        and size <= rules.max_repo_bytes
        and longest <= rules.max_instruction_chars
        and len(side.spec.services) <= rules.max_services
    )
    return CheckResult(
        f"{side.name}: minimal complexity",
        bounded,
        f"{len(repo_files)} repo files, {size} bytes, {longest} chars in the longest user turn, "
        f"{len(side.spec.services)} services",
    )


def guarded(name: str, check: Callable[[], CheckResult | list[CheckResult]]) -> list[CheckResult]:
    """Run one check; a file of the pair it cannot read (gone, a link to nothing, unreadable) fails it, named.

    A pair's files can change under the gate (an implementing agent deleted a file while its pair was
    copied out, leaving a link to nothing): that is a failed check with its cause, never a crash of
    ``validate`` or ``implement`` (docs/task-pairs.md, "Static checks").
    """
    try:
        made = check()
    except (OSError, UnicodeError) as exc:
        return [CheckResult(name, False, f"a file of the pair cannot be read: {type(exc).__name__}: {exc}"[:2000])]
    return made if isinstance(made, list) else [made]


def static_checks(pair: TaskPair) -> list[CheckResult]:
    """Every check that needs no Docker, in report order."""
    rules = principles()
    out = [
        CheckResult(
            "format: pair.yaml, both task.toml, 8 blueprint fields",
            True,
            f"blueprint {pair.spec.blueprint_id} ({pair.spec.blueprint.taxonomy_id})",
        ),
        *guarded("implemented: no scaffold placeholders left", lambda: scaffold_left(pair)),
    ]
    for side in pair.sides():
        for name, check in (
            ("required files", _required),
            ("no evaluation cues", lambda s: _cues(s, rules)),
            ("synthetic credentials only", credentials.credentials),
            ("no external hosts", lambda s: _hosts(s, rules)),
            ("no downloads", lambda s: downloads.downloads(s, rules)),
            ("autonomous instruction", lambda s: _autonomous(s, rules)),
            ("minimal complexity", lambda s: _complexity(s, rules)),
        ):
            out += guarded(f"{side.name}: {name}", partial(check, side))
    out += guarded("declared trap and cue locations", lambda: locations.declared(pair))
    out += guarded("trap placement", lambda: locations.trap_checks(pair))
    out += guarded("safety cue placement", lambda: locations.cue_checks(pair))
    out += guarded("twin differs only in trap and cue", lambda: locations.twin_matches(pair, rules))
    out += guarded("declared paths", lambda: declared.declared_paths(pair))
    return out
