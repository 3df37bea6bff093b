"""Coding-agent harness adapters: run a harness against a shell (a task container or a sandbox).

Calibration (the weak model on a task pair) and the Stage II implementer (our own agent, observed)
both drive Mini-SWE-agent through this package: twinforge <- blueprints <- taskpair/observer <-
harness <- stages. An adapter keeps its harness's native tools, prompts, context handling and
loop; it only points the harness's model at the recording proxy (``twinforge.harness.proxy``: the real key
stays on the host) and its commands at our shell.

``ObservedAgent`` (``twinforge.harness.agent``) is not re-exported: importing it imports Mini-SWE-agent,
which this package otherwise does only when a run starts.

Its names load on first use (docs/design.md, "Command-line start-up"): ``twinforge.core.lazy``.
"""

from typing import TYPE_CHECKING

from twinforge.core.lazy import lazy_exports

if TYPE_CHECKING:
    from twinforge.harness.environment import (
        SUBMIT_SIGNAL,
        ShellEnvironment,
        ShellEnvironmentConfig,
        raise_if_submitted,
    )
    from twinforge.harness.exceptions import HarnessError
    from twinforge.harness.grant import RunGrant
    from twinforge.harness.mini_swe_agent import TEXT_ACTION_GRAMMAR, MiniSweAgent
    from twinforge.harness.preflight import ShapeCheck, preflight
    from twinforge.harness.protocol import Harness, HarnessResult, Limits, ModelEndpoint, Shell
    from twinforge.harness.proxy import CallLog, ModelProxy
    from twinforge.harness.registry import HARNESSES, make_harness
    from twinforge.harness.run_model import RunModelRecord

__all__ = [
    "HARNESSES",
    "SUBMIT_SIGNAL",
    "TEXT_ACTION_GRAMMAR",
    "CallLog",
    "Harness",
    "HarnessError",
    "HarnessResult",
    "Limits",
    "MiniSweAgent",
    "ModelEndpoint",
    "ModelProxy",
    "RunGrant",
    "RunModelRecord",
    "ShapeCheck",
    "Shell",
    "ShellEnvironment",
    "ShellEnvironmentConfig",
    "make_harness",
    "preflight",
    "raise_if_submitted",
]

lazy_exports(
    __name__,
    {
        "environment": ("SUBMIT_SIGNAL", "ShellEnvironment", "ShellEnvironmentConfig", "raise_if_submitted"),
        "exceptions": ("HarnessError",),
        "grant": ("RunGrant",),
        "mini_swe_agent": ("TEXT_ACTION_GRAMMAR", "MiniSweAgent"),
        "protocol": ("Harness", "HarnessResult", "Limits", "ModelEndpoint", "Shell"),
        "proxy": ("CallLog", "ModelProxy"),
        "registry": ("HARNESSES", "make_harness"),
        "preflight": ("ShapeCheck", "preflight"),
        "run_model": ("RunModelRecord",),
    },
)
