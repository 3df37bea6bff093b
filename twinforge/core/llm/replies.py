"""Reading a model's reply as JSON the way real servers send it.

Normalised before validation (each seen from real servers and SDKs, docs/workspace.md "Model
replies"): a byte-order mark, whitespace around the reply, and one markdown code fence around the
whole reply (llama.cpp's ``json_object`` mode does not always prevent one). Raw control characters
inside strings, which llama.cpp's grammar lets through, are accepted. Nothing else is repaired:
prose or text around a fence is reported with its cause, never guessed at.

A reply cut at ``max_tokens`` is read as far as it goes (pydantic-core's partial JSON mode), so the
complete items before the cut can be kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pydantic_core

_BOM = "\ufeff"
_FENCE_OPEN = re.compile(r"\A```[A-Za-z0-9_+.-]*[ \t]*\r?\n")
_FENCE_CLOSE = re.compile(r"\r?\n?```\Z")
_EXCERPT = 60


def normalise(text: str) -> str:
    """Drop a byte-order mark, surrounding whitespace and one code fence around the whole reply.

    A fence is removed only when the reply starts with it; a reply cut before its closing fence
    loses the opening one too. Text before a fence is left, so the parse error names it.

    Args:
        text: The raw reply.

    Returns:
        The text to parse.
    """
    body = text.strip().lstrip(_BOM).strip()
    opened = _FENCE_OPEN.match(body)
    if opened is None:
        return body
    inner = body[opened.end() :]
    closed = _FENCE_CLOSE.search(inner)
    if closed is not None:
        inner = inner[: closed.start()]
    elif "```" in inner:
        return body  # a fence followed by more text: not one fenced document
    return inner.strip().lstrip(_BOM).strip()


@dataclass(frozen=True)
class Parsed:
    """A reply read as JSON.

    Attributes:
        value: The document, ``None`` when it could not be read.
        error: Why it could not be read (names the cause), else ``None``.
        partial: The reply was cut short and ``value`` holds what came before the cut; the last
            element of a list in it may be incomplete.
    """

    value: Any
    error: str | None = None
    partial: bool = False


def _excerpt(text: str) -> str:
    short = text[:_EXCERPT] + ("..." if len(text) > _EXCERPT else "")
    return json.dumps(short)


def _cause(text: str, exc: json.JSONDecodeError, cut_at: int | None) -> str:
    if cut_at is not None:
        return f"not valid JSON: the reply was cut off at max_tokens={cut_at} ({exc})"
    if "```" in text:
        return f"not valid JSON: the reply holds a code fence with other text around it ({exc})"
    if exc.msg.startswith("Extra data"):
        return f"not valid JSON: more text follows the JSON document ({exc})"
    if text[:1] not in ("{", "["):
        return f"not valid JSON: the reply starts with {_excerpt(text)}, not with a JSON object ({exc})"
    return f"not valid JSON: {exc}"


def _escape_controls_in_strings(text: str) -> str:
    """Escape raw control characters inside JSON strings (jiter, unlike ``json``, refuses them)."""
    out: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            elif char < " ":
                out.append(f"\\u{ord(char):04x}")
                continue
        elif char == '"':
            in_string = True
        out.append(char)
    return "".join(out)


def parse_reply(text: str, *, cut_at: int | None = None) -> Parsed:
    """Read a normalised reply as one JSON document.

    Args:
        text: The reply (see :func:`normalise`).
        cut_at: The ``max_tokens`` the reply was cut at, when it was (``finish_reason`` length);
            ``0`` when cut at an unknown cap.

    Returns:
        The document, or the cause it could not be read. A cut reply is read up to the cut
        (``partial`` set) when its beginning is JSON.
    """
    if not text:
        return Parsed(None, "the reply is empty" + (f" (cut off at max_tokens={cut_at})" if cut_at else ""))
    try:
        return Parsed(json.loads(text, strict=False))
    except json.JSONDecodeError as exc:
        error = _cause(text, exc, cut_at)
    if cut_at is None or text[:1] not in ("{", "["):
        return Parsed(None, error)
    try:
        value = pydantic_core.from_json(_escape_controls_in_strings(text), allow_partial=True)
    except ValueError:
        return Parsed(None, error)
    return Parsed(value, error, partial=True)


def ends_mid_number(text: str) -> bool:
    """Whether the last list element read from a cut reply may be incomplete.

    pydantic-core drops a string cut in the middle, so an element cut inside a string misses that
    field and fails validation; a number cut in the middle would be read short, so an element
    that ends in a digit at the cut is treated as incomplete too.
    """
    return text.rstrip()[-1:].isdigit()
