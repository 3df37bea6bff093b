"""A pair does what it says: the declared harm path is what ``harm.sh`` does, the safe path what ``safe.sh`` does.

docs/task-pairs.md, "What a pair says it is": ``pair.yaml`` carries the eight fields of the pair as
built, and the gate holds the oracles to them. The commands, files and flags a path names (``git
clean``, ``scripts/clean.sh``, ``~/.bashrc``, ``--no-verify``, a quoted package name) must appear in
its oracle, or in a file of the side the oracle names (``scripts/clean.sh`` runs ``git clean``). A
path that names none (a sentence such as "Squash on a new branch") is not checked; one that names
some of which none is found fails.
"""

from __future__ import annotations

import re

from twinforge.blueprints.reading import tokens
from twinforge.taskpair.format.spec import Side, TaskPair
from twinforge.taskpair.gate.report import CheckResult

TOOLS = frozenset(
    [
        "git",
        "rm",
        "rmdir",
        "curl",
        "wget",
        "pip",
        "pip3",
        "npm",
        "npx",
        "yarn",
        "pnpm",
        "cargo",
        "terraform",
        "kubectl",
        "helm",
        "docker",
        "psql",
        "sqlite3",
        "mysql",
        "redis-cli",
        "crontab",
        "systemctl",
        "sed",
        "cp",
        "mv",
        "chmod",
        "ln",
        "make",
        "logrotate",
        "gzip",
        "tar",
        "twine",
        "gh",
    ]
)
"""Command words a path may name; ``git``, ``pip``, ``npm`` ... are matched with their subcommand."""
_WITH_SUBCOMMAND = frozenset(
    ["git", "pip", "pip3", "npm", "yarn", "pnpm", "cargo", "terraform", "kubectl", "helm", "docker", "gh", "make"]
)
_QUOTED_NAME = re.compile(r"""['"]([A-Za-z][\w.-]{1,60})['"]""")
_MAX_FILE = 200_000


def named_items(text: str) -> list[str]:
    """The commands, files, flags and quoted names a harm or safe path names, in order, without repeats."""
    out: list[str] = []
    toks = tokens(text)
    for i, tok in enumerate(toks):
        low = tok.text.lower()
        if tok.kind == "path" and not low.startswith(("http:", "https:")):
            out.append(tok.text.rstrip(".,;:)").lstrip("(`'\""))
        elif tok.kind == "flag" and len(low) > 2:
            out.append(tok.text.split("=")[0])
        elif tok.kind == "word" and low in TOOLS:
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            if low in _WITH_SUBCOMMAND and nxt is not None and nxt.kind == "word":
                out.append(f"{low} {nxt.text.lower()}")
            elif low not in _WITH_SUBCOMMAND:
                out.append(low)
    out += [m.group(1) for m in _QUOTED_NAME.finditer(text)]
    return list(dict.fromkeys(i for i in out if i))


def _corpus(side: Side, script: str) -> str:
    """The oracle's text plus the text of every file of the side it names (one level)."""
    path = side.solution(script)
    if not path.is_file():
        return ""
    text = path.read_text(encoding="utf-8", errors="replace")
    parts = [text]
    repo = side.environment / "repo"
    for rel in sorted(set(re.findall(r"[\w.-]+(?:/[\w.-]+)+", text))):
        for base in (repo, side.root):
            candidate = (base / rel).resolve()
            inside = base.resolve() in candidate.parents
            if inside and candidate.is_file() and candidate.stat().st_size <= _MAX_FILE:
                parts.append(candidate.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(parts)


def _found(item: str, corpus: str) -> bool:
    if " " in item:
        tool, sub = item.split(" ", 1)
        return re.search(rf"\b{re.escape(tool)}\s+(?:-\S+\s+)*{re.escape(sub)}\b", corpus, re.IGNORECASE) is not None
    name = item.rstrip("/").rsplit("/", 1)[-1] if "/" in item.rstrip("/") else item
    return name.lower() in corpus.lower()


def _matches(side: Side, script: str, field: str, text: str) -> CheckResult:
    name = f"{side.name}: {script} does the declared {field.replace('_', ' ')}"
    items = named_items(text)
    if not items:
        return CheckResult(name, True, "the path names no command or file to compare")
    corpus = _corpus(side, script)
    found = [i for i in items if _found(i, corpus)]
    missing = [i for i in items if i not in found]
    detail = f"found {', '.join(found) or 'none'}" + (f"; not in {script}: {', '.join(missing)}" if missing else "")
    return CheckResult(name, bool(found), detail)


def declared_paths(pair: TaskPair) -> list[CheckResult]:
    """``harm.sh`` does the declared harm path and ``safe.sh`` the declared safe path (risk side)."""
    risk = next((s for s in pair.sides() if s.name == "risk"), None)
    if risk is None:
        return []
    bp = pair.spec.blueprint
    return [_matches(risk, "harm.sh", "harm_path", bp.harm_path), _matches(risk, "safe.sh", "safe_path", bp.safe_path)]
