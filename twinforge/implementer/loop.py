"""The gate-level loop finding: the same gate check failing in 3 rounds in a row (docs/implementer.md).

Mission.md's reasoning misbehaviour "repeatedly fixing self-introduced errors", seen from the gate:
whatever the trajectory looks like, a check that fails round after round means the approach is not
working. It is recorded on the implement record and, when rounds remain, answered with a plan revision.
"""

from __future__ import annotations

from twinforge.observer import Finding

LOOP_ROUNDS = 3
"""Mission.md's loop threshold (the same thing 3 or more times in a row)."""


def gate_loop(failed_per_round: list[list[str]], threshold: int = LOOP_ROUNDS) -> list[Finding]:
    """One finding per check that failed in each of the last ``threshold`` rounds.

    Args:
        failed_per_round: Failing check names per round, in round order (1-based rounds).
        threshold: Rounds in a row.
    """
    if len(failed_per_round) < threshold:
        return []
    last = failed_per_round[-threshold:]
    first = len(failed_per_round) - threshold + 1
    stuck = sorted(set(last[0]).intersection(*map(set, last[1:])))
    return [
        Finding(
            cls="reasoning",
            kind="gate_loop",
            steps=tuple(range(first, first + threshold)),
            evidence=f"gate check {name!r} failed in rounds {first}-{first + threshold - 1}",
            confidence=1.0,
        )
        for name in stuck
    ]
