"""Synthetic credentials only (docs/task-pairs.md, "Credentials"; harmless simulation, docs/design.md).

Anything credential-shaped the agent can see must be a canary declared in the side's task.toml.
Two layers, both from one maintained rule set, MongoDB's Kingfisher catalog (``kingfisher_sdk``,
about 490 provider rules that include the Betterleaks / Gitleaks ones):

1. The catalog's rules themselves: exact provider formats (AWS, GCP ``AIza``, Stripe, GitHub,
   Anthropic ``sk-ant-api03-``, OpenAI ``sk-proj-``, private keys, credentials in URIs, ...).
2. Near misses of those formats: a token that starts with the literal prefix of a catalog rule
   (derived from the rule's own pattern, e.g. ``sk-proj-``, ``sk-ant-api03-``, ``ghp_``) followed
   by at least ``MIN_TAIL`` random-looking characters. A made-up key with a real provider's prefix
   but the wrong length is still a real-looking key, and the catalog's exact rules skip it.

Scanning runs in process and offline: the SDK never uses the network for scanning (validation,
which would, is a separate API this module never calls). Compiled rules are cached under
twinforge's cache folder. Reported values are shortened.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from kingfisher_sdk import Rules, Scanner

from twinforge.core.paths import cache_dir
from twinforge.taskpair.format.spec import Side
from twinforge.taskpair.gate.principles import Visible, line_of, visible
from twinforge.taskpair.gate.report import CheckResult

MIN_TAIL = 16
"""Characters after a provider prefix before a token counts as a key (the shortest real formats have 20+)."""
MIN_ENTROPY = 3.0
"""Shannon entropy (bits per character) of that tail: random keys have 4-6, identifiers less than 3."""
SHOWN = 12
"""Characters of a found value the report shows."""

_LEAD = re.compile(r"^(?:\(\?[a-zA-Z]+\)|\\b|\((?!\?)|\^)")
_LITERAL = re.compile(r"^(?:[A-Za-z0-9_-]|\\[-._/:])")
_PREFIX_SHAPE = re.compile(
    r"^(?=.{4,})(?:[A-Za-z0-9]+[-_.][A-Za-z0-9_.-]*|[A-Z][A-Za-z]{3}|[A-Za-z]*[0-9][A-Za-z0-9]*)$"
)


@dataclass(frozen=True)
class Found:
    """One undeclared credential.

    Attributes:
        where: ``<file>:<line>`` relative to the side folder.
        value: The value, shortened to :data:`SHOWN` characters.
        rule: The catalog rule that matched (``prefix of <rule>`` for a near miss).
    """

    where: str
    value: str
    rule: str

    def __str__(self) -> str:
        return f"{self.where}: {self.value} ({self.rule})"


def _literal(text: str) -> str | None:
    """``text`` without escapes when it is nothing but literal characters, else ``None``."""
    out = ""
    while text:
        match = _LITERAL.match(text)
        if match is None:
            return None
        out += match.group(0)[-1]
        text = text[match.end() :]
    return out


def _group(pattern: str) -> tuple[list[str], int] | None:
    """The literal alternatives of the group ``pattern`` starts with, and the group's length.

    ``(?:AKIA|ASIA|A3T[A-Z0-9])`` gives ``["AKIA", "ASIA"]``: alternatives that are not literal are
    left out (the prefixes only widen recall). ``None`` when no alternative is literal or the group
    is quantified.
    """
    depth, end, escaped = 0, -1, False
    for index, char in enumerate(pattern):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                end = index
                break
    if end < 0 or pattern[end + 1 : end + 2] in ("?", "*", "+", "{"):
        return None
    body = pattern[1:end].removeprefix("?:")
    alternatives, depth, start, escaped = [], 0, 0, False
    for index, char in enumerate(body):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "|" and depth == 0:
            alternatives.append(body[start:index])
            start = index + 1
    alternatives.append(body[start:])
    words = [w for w in map(_literal, alternatives) if w]
    return (words, end + 1) if words else None


def literal_prefixes(pattern: str) -> list[str]:
    """The literal text matches of a rule pattern start with, one per leading alternative.

    Reads leading literal characters and groups of literal alternatives (``sk-(?:proj|admin)-``
    gives ``sk-proj-`` and ``sk-admin-``) and stops at the first other construct.
    """
    while match := _LEAD.match(pattern):
        pattern = pattern[match.end() :]
    out = [""]
    while pattern:
        if match := _LITERAL.match(pattern):
            out = [o + match.group(0)[-1] for o in out]
            pattern = pattern[match.end() :]
        elif pattern.startswith("(") and (group := _group(pattern)) is not None:
            words, length = group
            out = [o + w for o in out for w in words]
            pattern = pattern[length:]
        else:
            break
    return out


@cache
def rules_cache() -> Path:
    """Where this process keeps the compiled rule catalog (compiling takes 5-20 s on 2 cores; loading 1-2 s)."""
    return cache_dir() / "kingfisher"


@cache
def _catalog() -> tuple[Scanner, dict[str, str]]:
    rules = Rules(cache_dir=rules_cache())
    prefixes: dict[str, str] = {}
    for meta in rules.metadata():
        for prefix in literal_prefixes(str(rules.detail(meta["id"])["pattern"])):
            if _PREFIX_SHAPE.match(prefix):
                prefixes.setdefault(prefix, str(meta["id"]).removeprefix("betterleaks."))
    return Scanner(rules), prefixes


@cache
def _near_miss() -> re.Pattern[str]:
    _scanner, prefixes = _catalog()
    alternatives = "|".join(re.escape(p) for p in sorted(prefixes, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9_-])({alternatives})([A-Za-z0-9_-]{{{MIN_TAIL},}})")


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _declared(value: str, canaries: list[str]) -> bool:
    return any(value in c or c in value for c in canaries)


def scan(item: Visible, canaries: list[str]) -> list[Found]:
    """Undeclared credentials in one agent-visible file (catalog rules, then near misses)."""
    scanner, prefixes = _catalog()
    found: dict[tuple[int, str], Found] = {}
    for finding in scanner.scan(item.data):
        if not finding.visible or _declared(finding.secret, canaries):
            continue
        line = int(finding.location.get("line", 0))
        short = finding.secret[:SHOWN] + ("…" if len(finding.secret) > SHOWN else "")
        found[(line, finding.secret)] = Found(
            f"{item.name}:{line}", short, finding.rule_id.removeprefix("betterleaks.")
        )
    text = item.text if item.text is not None else item.data.decode("latin-1")
    for match in _near_miss().finditer(text):
        value, tail = match.group(0), match.group(2)
        if _declared(value, canaries) or not any(c.isdigit() for c in tail) or _entropy(tail) < MIN_ENTROPY:
            continue
        line = line_of(text, match.start())
        if any(key[0] == line and (value in key[1] or key[1] in value) for key in found):
            continue
        short = value[:SHOWN] + ("…" if len(value) > SHOWN else "")
        found[(line, value)] = Found(f"{item.name}:{line}", short, f"prefix of {prefixes[match.group(1)]}")
    return list(found.values())


def credentials(side: Side) -> CheckResult:
    """Every credential-shaped value the agent can see is a declared canary (file, line, value shortened)."""
    found = [str(f) for item in visible(side, archives=True) for f in scan(item, side.spec.canaries)]
    return CheckResult(
        f"{side.name}: synthetic credentials only (declared canaries)",
        not found,
        "; ".join(found[:8]) + (f"; and {len(found) - 8} more" if len(found) > 8 else "")
        or f"{len(side.spec.canaries)} declared canaries; no other credential",
    )
