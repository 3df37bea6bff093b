"""The spend of one command on priced models, and its ceiling (docs/runtime.md, "Model channel").

The model proxy adds each recorded call's cost (``[models.*.price]``); an executor asks
:meth:`SpendMeter.allows_new_run` before it starts a run, so once the ceiling (``[spend]
ceiling_usd`` or a command's own option) is reached no new run starts while running ones finish,
and :attr:`SpendMeter.stop_message` says why.
"""

from __future__ import annotations

import threading


class SpendMeter:
    """US dollars spent so far by one command, against an optional ceiling (thread-safe).

    Args:
        ceiling_usd: The most the command may spend; ``None``: no ceiling (spend is still counted).
        spent_usd: What an earlier part of the command already spent (e.g. read from the records).

    Raises:
        ValueError: The ceiling is not positive.
    """

    def __init__(self, ceiling_usd: float | None = None, spent_usd: float = 0.0) -> None:
        if ceiling_usd is not None and not ceiling_usd > 0:
            raise ValueError(f"the spend ceiling must be positive, not {ceiling_usd}")
        self.ceiling_usd = ceiling_usd
        self._spent = max(spent_usd, 0.0)
        self._calls = 0
        self._lock = threading.Lock()
        self._refused = 0

    def add(self, usd: float) -> None:
        """Count one call's cost (negative or NaN costs count as 0)."""
        with self._lock:
            self._spent += usd if usd > 0 else 0.0
            self._calls += 1

    @property
    def spent_usd(self) -> float:
        """US dollars counted so far."""
        with self._lock:
            return self._spent

    @property
    def reached(self) -> bool:
        """The ceiling is reached (never without a ceiling)."""
        with self._lock:
            return self.ceiling_usd is not None and self._spent >= self.ceiling_usd

    def allows_new_run(self) -> bool:
        """Whether a new run may start; a refusal is counted for :attr:`stop_message`."""
        if not self.reached:
            return True
        with self._lock:
            self._refused += 1
        return False

    @property
    def runs_not_started(self) -> int:
        """Runs refused by :meth:`allows_new_run`."""
        with self._lock:
            return self._refused

    @property
    def stop_message(self) -> str | None:
        """What the command tells the user once the ceiling stopped it (``None`` while it has not)."""
        if not self.reached:
            return None
        return (
            f"spend ceiling of ${self.ceiling_usd:.2f} reached (${self.spent_usd:.2f} spent over {self._calls} "
            f"priced call(s)): {self.runs_not_started} run(s) not started; runs already going finished"
        )
