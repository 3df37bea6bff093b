"""Errors of the harness adapters."""

from __future__ import annotations

from twinforge.core.exceptions import TwinforgeError


class HarnessError(TwinforgeError):
    """A harness adapter cannot be built or configured as asked (the message says which option)."""
