r"""Agent- and model-written text made storable (docs/runtime.md, "Channels the agent can write").

Text an agent writes reaches files, JSON records and SQLite: a lone surrogate (a CLI's JSON may carry
``\udXXX`` escapes) cannot be encoded as UTF-8 and once made a run's evidence write fail, so the run
was stored UNDETERMINED and blamed on the infrastructure; a NUL cuts text short in C readers. Every
such text passes :func:`storable` before it is stored.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\ud800-\udfff\x00]")


def storable(text: str) -> str:
    """``text`` with each lone surrogate and each NUL replaced by one U+FFFD; everything else unchanged.

    ``json.loads`` joins an escaped surrogate pair into one character, so a surrogate left in a ``str``
    is always a lone half, which no UTF-8 writer accepts.
    """
    return _UNSTORABLE.sub(REPLACEMENT, text)
