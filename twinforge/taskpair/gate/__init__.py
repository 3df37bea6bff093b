"""The validation gate, one module per kind of check (docs/task-pairs.md, "The validation gate").

``twinforge.taskpair.gate.validate`` assembles them: static checks (format, scaffold placeholders, design
principles, trap and cue locations, downloads in builds) and dynamic checks in Docker (images
build with no network, oracles held to their exit status, no-op agent, detector determinism, the
cheat battery).
"""

from twinforge.taskpair.gate.report import CheckResult, PairReport

__all__ = ["CheckResult", "PairReport"]
