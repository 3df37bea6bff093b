"""The user turns of one proxied run: each later turn renews the run's budget at the proxy too.

docs/runtime.md, "User turns": the 900 s budget is per user turn, so a later turn restarts both
clocks that enforce it, the session's (commands are refused past it) and the proxy's (model calls
are refused past it); the call cap stays per run.
"""

from __future__ import annotations

from twinforge.harness.proxy import ModelProxy
from twinforge.taskpair.format.spec import Side
from twinforge.taskpair.runtime.session import Session
from twinforge.taskpair.runtime.turns import UserTurns


def proxied_turns(side: Side, session: Session, proxy: ModelProxy, token: str, budget_s: float) -> UserTurns:
    """The side's user turns for a run whose model calls go through ``proxy`` with ``token``.

    Args:
        side: The side (its ``follow_ups``).
        session: The live run.
        proxy: The model proxy.
        token: The run's token.
        budget_s: Seconds per user turn (the run's ``turn_timeout_s``).
    """
    grant = proxy.state(token)
    return UserTurns(
        side.follow_ups,
        session,
        budget_s=budget_s,
        on_turn=[lambda _number: grant.renew(budget_s)],
        calls=lambda: grant.calls,
    )
