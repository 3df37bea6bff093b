"""Doubts about where a scenario lives: its source, the hosts it names, the credentials it shows.

The study's harmless-simulation principle (docs/design.md, "Design principles": synthetic
credentials, local receivers only) and grounding in a public incident (docs/stage1.md, "Incident
lists") are read from the words of a blueprint here. Each is a doubt: a person decides.
"""

from __future__ import annotations

import ipaddress
import re
from functools import cache
from pathlib import Path

import yaml

from twinforge.blueprints.blueprint import Blueprint
from twinforge.blueprints.checks.rules import Credential, ExternalHost, SourceForm, compile_patterns
from twinforge.core.paths import guidelines_dir

_URL_HOST = re.compile(r"\b(?:https?|ftp|git|ssh|s3|wss?)://(?:[^@/\s]+@)?([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\])", re.I)
_BARE_HOST = re.compile(r"(?<![\w./@-])((?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+([a-z]{2,}))(?![\w-]|\.[a-z0-9])", re.I)
_IP = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?![\w.]*\d)")


@cache
def corpus_refs(path: Path, _stamp: int) -> frozenset[str]:
    """The ``ref`` of every incident of an incident list (empty when it cannot be read)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return frozenset()
    items = data if isinstance(data, list) else []
    return frozenset(str(i["ref"]).strip() for i in items if isinstance(i, dict) and i.get("ref"))


def _local(host: str, local: list[str]) -> bool:
    host = host.lower().rstrip(".")
    for name in local:
        name = name.lower()
        if name.startswith("."):
            if host.endswith(name) or host == name[1:]:
                return True
        elif host == name:
            return True
    return False


def _public_ip(text: str) -> bool:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    return address.is_global


def source_problem(rule: SourceForm, bp: Blueprint) -> str | None:
    """Why ``source_reference`` grounds nothing a person could look up, or ``None``."""
    ref = bp.source_reference.strip()
    path = guidelines_dir() / rule.corpus
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        stamp = 0
    if ref in corpus_refs(path, stamp):
        return None
    if not any(p.fullmatch(ref) for p in compile_patterns(rule.patterns, f"rule {rule.id}")):
        return ref
    host = _URL_HOST.match(ref)
    if host is not None and _local(host.group(1), rule.local_hosts):
        return ref
    return None


def hosts_in(text: str, rule: ExternalHost) -> list[str]:
    """Hosts named in ``text`` that lie outside this machine (URL hosts, bare domain names, public IPs)."""
    found: list[str] = []
    for match in _URL_HOST.finditer(text):
        host = match.group(1).strip("[]")
        if "." in host and not _local(host, rule.local_hosts) and (_public_ip(host) or not _IP.fullmatch(host)):
            found.append(host)
    without_urls = _URL_HOST.sub(" ", text)
    suffixes = {s.lower().lstrip(".") for s in rule.public_suffixes}
    for match in _BARE_HOST.finditer(without_urls):
        host, tld = match.group(1), match.group(2).lower()
        if tld in suffixes and not _local(host, rule.local_hosts):
            found.append(host)
    found += [ip for ip in _IP.findall(without_urls) if _public_ip(ip)]
    return list(dict.fromkeys(found))


def credentials_in(text: str, rule: Credential) -> list[str]:
    """Credential-shaped strings in ``text`` that do not read as canaries.

    A string reads as a canary when it, or the 40 characters before it, holds a canary word
    ("canary", "fake", "EXAMPLE", ...): the blueprint says it is planted.
    """
    canary = [w.lower() for w in rule.canary_words]
    out = []
    for pattern in rule.compiled:
        for match in pattern.finditer(text):
            token = match.group(0)
            before = text[max(0, match.start() - 40) : match.start()].lower()
            if not any(w in token.lower() or w in before for w in canary):
                out.append(token)
    return list(dict.fromkeys(out))
