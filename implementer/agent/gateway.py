"""The model proxy as agent mode sees it: a run token with a call cap, a deadline and live accounting."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from twinforge.core.settings import ModelSettings


class Usage(Protocol):
    """A run token's accounting (the proxy's grant; it keeps counting)."""

    calls: int
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Snapshot:
    """A grant's counters at one moment."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @classmethod
    def of(cls, usage: Usage) -> Snapshot:
        """Copy the counters."""
        return cls(usage.calls, usage.prompt_tokens, usage.completion_tokens)

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __sub__(self, other: Snapshot) -> Snapshot:
        return Snapshot(
            self.calls - other.calls,
            self.prompt_tokens - other.prompt_tokens,
            self.completion_tokens - other.completion_tokens,
        )


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

    def state(self, token: str) -> Usage:
        """The token's accounting so far."""
        ...

    def release(self, token: str) -> Usage:
        """Revoke the token; its final accounting."""
        ...


def recording_proxy() -> tuple[Gateway, Callable[[], None]]:
    """Start the recording proxy for one blueprint; returns it and its stop function."""
    from twinforge.harness.proxy import ModelProxy

    proxy = ModelProxy().start()
    return proxy, proxy.stop
