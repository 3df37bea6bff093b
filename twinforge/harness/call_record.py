"""What the model proxy records of each call: transcript and records database (docs/calibration.md, "Model proxy").

Every call is recorded as it ended: a refusal, an upstream error, a whole reply, a stream that
reached its end, or a stream cut by the upstream (status 502, ``cut: "upstream"``) or by the harness
(status 499, ``cut: "client"``) with the bytes received and the error, never as a complete 200. A
translated call keeps both shapes: the harness's request and reply (``shape``, ``request``,
``reply``) and the upstream's (``upstream_shape``, ``upstream_request``, ``upstream_reply``).
Usage the proxy counted itself (a cut stream; :mod:`twinforge.harness.stream_tokens`) is marked
``usage_source: "counted"``; prompt-cache writes (``cache_write_tokens``) are priced at their own
rate (:class:`~twinforge.core.price.ModelPrice`).
"""

from __future__ import annotations

import json
import time
from typing import Any, Protocol

from twinforge.core.llm import Usage
from twinforge.core.spend import SpendMeter
from twinforge.harness.grant import RunGrant
from twinforge.harness.shapes import Reply, Role, Shape

CLIENT_CUT = 499
"""Status recorded for a stream the harness closed before its end (the convention of nginx and others)."""
UPSTREAM_CUT = 502
"""Status recorded for a stream the upstream ended before its end mark (the proxy's "upstream failed")."""


class CallLog(Protocol):
    """Where the proxy records each call (calibration's records database; ``None`` keeps the transcript only)."""

    def add_call(self, **values: Any) -> None:
        """Record one call: run_id, n, role, shape, status, seconds, prompt/completion tokens, refused, error."""
        ...


class CallEntry:
    """One call on its way through the proxy (what the record will say)."""

    def __init__(
        self, n: int, role: Role, shape: Shape, request: dict[str, Any] | None, tools: list[str] | None = None
    ) -> None:
        self.n, self.role, self.shape, self.request = n, role, shape, request
        self.tools = tools or []
        self.upstream_shape: Shape = shape
        self.upstream_request: dict[str, Any] | None = None
        self.notes: list[str] = []
        self.status = 0
        self.upstream_status: int | None = None
        self.seconds = 0.0
        self.refused: str | None = None
        self.error: str | None = None
        self.cut: str | None = None
        self.received = 0
        self.response: Any = None
        self.reply: Reply | None = None
        self.upstream_reply: Reply | None = None
        self.usage = Usage()
        self.sent: dict[str, Any] = {}
        self.pings = 0
        self.attempts = 1
        self.cache_write_tokens = 0
        self.counted_by: str | None = None

    @property
    def translated(self) -> bool:
        """The call crossed between shapes."""
        return self.upstream_shape != self.shape


def _tokens(usage: dict[str, Any], name: str) -> int:
    value = usage.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return 0
    try:
        return max(int(float(value)), 0)
    except (ValueError, OverflowError):
        return 0


def read_reply(content: bytes) -> tuple[Any, Usage, str | None]:
    """Parse an upstream reply for the records, whatever its shape.

    Args:
        content: The raw body the upstream sent.

    Returns:
        ``(payload, usage, problem)``: the JSON payload (or ``{"raw": text}`` for a body that is not
        JSON, e.g. an error page), token usage with malformed counts read as 0 (Chat's
        ``prompt_tokens`` / ``completion_tokens`` or Responses' and Messages' ``input_tokens`` /
        ``output_tokens``; cached prompt tokens from ``prompt_tokens_details`` / ``input_tokens_details``
        or Messages' ``cache_read_input_tokens``, which Messages counts apart from ``input_tokens``,
        so they are added to the prompt), and a note on what was malformed (``None`` when the reply
        was a well-formed JSON object).
    """
    try:
        payload: Any = json.loads(content)
    except ValueError:
        text = content.decode("utf-8", errors="replace")
        return {"raw": text[:20000], "bytes": len(content)}, Usage(), "upstream reply is not JSON"
    if not isinstance(payload, dict):
        return payload, Usage(), f"upstream reply is a JSON {type(payload).__name__}, not an object"
    raw = payload.get("usage")
    usage = raw if isinstance(raw, dict) else {}
    names = {"prompt_tokens": "input_tokens", "completion_tokens": "output_tokens"}
    counts = {name: _tokens(usage, name if name in usage else alias) for name, alias in names.items()}
    problem = None
    present = {n: usage[n if n in usage else a] for n, a in names.items() if n in usage or a in usage}
    if raw is not None and (not isinstance(raw, dict) or any(counts[n] != v for n, v in present.items())):
        problem = f"malformed usage: {json.dumps(raw, default=str)[:200]}"
    details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details")
    cached = _tokens(details, "cached_tokens") if isinstance(details, dict) else 0
    if "cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage:  # Anthropic counts them apart
        cached = _tokens(usage, "cache_read_input_tokens")
        counts["prompt_tokens"] += cached + _tokens(usage, "cache_creation_input_tokens")
    return payload, Usage(**counts, cached_tokens=min(cached, counts["prompt_tokens"])), problem


def cache_writes(payload: Any) -> int:
    """Prompt tokens a whole Messages reply wrote to the cache (``usage.cache_creation_input_tokens``; else 0)."""
    usage = payload.get("usage") if isinstance(payload, dict) else None
    return _tokens(usage, "cache_creation_input_tokens") if isinstance(usage, dict) else 0


def detail_of(entry: CallEntry, content: bytes) -> str:
    """What a failed upstream said: its error message, else the head of its body."""
    payload, _, _ = read_reply(content)
    error = payload.get("error") if isinstance(payload, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return str(message or entry.error or content[:200].decode("utf-8", "replace"))


def record_call(grant: RunGrant, entry: CallEntry, records: CallLog | None, spend: SpendMeter | None) -> None:
    """Write one call to the run's transcript and the records database, and count its usage and cost."""
    reply = entry.reply or Reply()
    usage = entry.usage if entry.usage.tokens else reply.usage
    if entry.attempts > 1:  # what the upstream answered before is an error worth keeping
        entry.error = "; ".join(filter(None, [entry.error, f"answered on attempt {entry.attempts}"]))
    price = grant.upstream.price
    written = entry.cache_write_tokens
    cost = price.cost(usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens, written) if price else None
    with grant.lock:
        grant.usage += usage.model_copy(update={"calls": 1, "seconds": max(entry.seconds, 0.0)})
        grant.cost_usd += cost or 0.0
        grant.shapes.add((entry.shape, entry.upstream_shape))
    if spend is not None and cost is not None:
        spend.add(cost)
    line: dict[str, Any] = {
        "n": entry.n,
        "role": entry.role,
        "shape": entry.shape,
        "upstream_shape": entry.upstream_shape,
        "status": entry.status,
        "seconds": round(entry.seconds, 4),
        "usage": usage.model_dump(include={"prompt_tokens", "cached_tokens", "completion_tokens"}),
        "cost_usd": round(cost, 8) if cost is not None else None,
        "sent": entry.sent,
        "refused": entry.refused,
        "error": entry.error,
        "attempts": entry.attempts,
        "tools": entry.tools,
        "request": entry.request,
        "response": entry.response,
        "reply": reply.as_dict() if entry.reply is not None else None,
        "at": time.time(),
    }
    if written:
        line["usage"]["cache_write_tokens"] = written
    if entry.counted_by is not None:  # the upstream's usage was missing: counted by the proxy (harness.stream_tokens)
        line.update(usage_source="counted", counted_by=entry.counted_by)
    if entry.notes:
        line["notes"] = entry.notes
    if entry.cut is not None or entry.received:
        line.update(cut=entry.cut, received_bytes=entry.received, upstream_status=entry.upstream_status)
    if entry.translated:
        line.update(
            upstream_request=entry.upstream_request,
            upstream_reply=entry.upstream_reply.as_dict() if entry.upstream_reply is not None else None,
            notes=entry.notes,
        )
    if records is not None:
        try:
            records.add_call(
                run_id=grant.run_id,
                n=entry.n,
                role=entry.role,
                shape=entry.shape,
                status=entry.status,
                seconds=entry.seconds,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                refused=entry.refused,
                error=entry.error,
            )
        except Exception as exc:  # the transcript below still holds the call
            grant.record_errors += 1
            line["record_error"] = f"{type(exc).__name__}: {exc}"[:500]
    if grant.log is not None:
        with grant.log_lock:
            grant.log.parent.mkdir(parents=True, exist_ok=True)
            with grant.log.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(line, default=str) + "\n")
