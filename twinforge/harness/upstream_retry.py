"""The proxy's own retries of a passing upstream failure, alike for every harness (docs/calibration.md).

The CLIs' own retry policies differ by minutes (the harness kit measured Claude Code retrying 401,
429 and 500 for about 180 s, Codex 500 thirty times, OpenCode 429 and 500 for about 95 s, Pi 20 s),
so the proxy does not let them retry at all: it retries a rate limit or a server error itself, a
few times with growing waits (or the upstream's ``Retry-After``), never past the run's deadline;
what still fails ends the run (:meth:`twinforge.harness.grant.RunGrant.fail_upstream`). A refused
credential (401, 403) is never retried. Built on tenacity (no own retry loop).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, retry_if_result

from twinforge.harness.grant import RunGrant

RETRIED = frozenset({408, 429, 500, 502, 503, 504, 529})
"""Statuses worth another try: a time-out, a rate limit, a server error or overload (Anthropic's 529)."""
RETRY_WAITS_S = (2.0, 4.0, 8.0)
"""Seconds before each retry (so at most four attempts, about 14 s of waiting)."""
MAX_RETRY_AFTER_S = 30.0
"""The longest ``Retry-After`` honoured; a longer one fails the call at once."""


def _retry_after(state: RetryCallState) -> float | None:
    outcome = state.outcome
    if outcome is None or outcome.failed:
        return None
    value = outcome.result().headers.get("retry-after", "")
    try:
        return float(value)
    except ValueError:
        return None


async def send_with_retries(
    send: Callable[[], Awaitable[httpx.Response]], grant: RunGrant, waits: tuple[float, ...] = RETRY_WAITS_S
) -> tuple[httpx.Response, int]:
    """Call ``send`` until the upstream answers with something other than :data:`RETRIED` or a transport error.

    Args:
        send: Makes one upstream request (a whole reply, or a streamed one whose body is not read yet:
            ``send`` must read and close a response it gets with a retried status).
        grant: The run (its deadline bounds the waits).
        waits: Seconds before each retry.

    Returns:
        ``(the last response, attempts made)``.

    Raises:
        httpx.HTTPError: The last attempt failed in transport.
    """
    attempts = 0

    async def attempt() -> httpx.Response:
        nonlocal attempts
        attempts += 1
        return await send()

    def wait(state: RetryCallState) -> float:
        after = _retry_after(state)
        base = waits[min(state.attempt_number, len(waits)) - 1]
        return max(base, after) if after is not None else base

    def stop(state: RetryCallState) -> bool:
        after = _retry_after(state)
        too_long = after is not None and after > MAX_RETRY_AFTER_S
        return state.attempt_number > len(waits) or too_long or wait(state) >= grant.remaining_s - 1.0

    def last(state: RetryCallState) -> httpx.Response:
        if state.outcome is None:
            raise RuntimeError("no attempt was made")
        response: httpx.Response = state.outcome.result()  # the last response, or its transport error again
        return response

    retrying = AsyncRetrying(
        retry=retry_if_result(lambda r: r.status_code in RETRIED) | retry_if_exception_type(httpx.TransportError),
        wait=wait,
        stop=stop,
        retry_error_callback=last,
    )
    response: httpx.Response = await retrying(attempt)
    return response, attempts
