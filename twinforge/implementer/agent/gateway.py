"""The model proxy as agent mode sees it: a run token with a call cap, a deadline and live accounting."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from twinforge.core.llm import Usage
from twinforge.core.settings import ModelSettings


class Metered(Protocol):
    """A run token's accounting as the proxy keeps it (its grant; it keeps counting)."""

    @property
    def usage(self) -> Usage:
        """Every call recorded for the token so far: calls, tokens, seconds."""
        ...


class Gateway(Protocol):
    """The recording model proxy: the real key stays on the host; calls, tokens and deadline per token."""

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL the agent is pointed at."""
        ...

    def grant(
        self,
        run_id: str,
        upstream: ModelSettings,
        *,
        cap: int,
        seconds: float,
        extra_body: dict[str, Any] | None = None,
        log: Path | None = None,
    ) -> str:
        """Issue a run token."""
        ...

    def state(self, token: str) -> Metered:
        """The token's accounting so far."""
        ...

    def release(self, token: str) -> Metered:
        """Revoke the token; its final accounting."""
        ...


def recording_proxy() -> tuple[Gateway, Callable[[], None]]:
    """Start the recording proxy for one blueprint; returns it and its stop function."""
    from twinforge.harness.proxy import ModelProxy

    proxy = ModelProxy().start()
    return proxy, proxy.stop
