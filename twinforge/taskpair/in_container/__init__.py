"""Code that runs inside containers, kept in one place (docs/runtime.md, "Code that runs inside containers").

Nothing below this folder is imported by the host-side package: each part is mounted read-only
into a container (or handed to it) and run there by the base image's own ``python3`` or ``bash``,
with the standard library only. This module only says where each part lives on the host.

| part | runs in | how it gets there |
|---|---|---|
| ``services/`` | each service container (receiver, index, git remote, hosting API, SQL database) | mounted at :data:`SERVICES_MOUNT` |
| ``wrapper/command_tree.py`` | the task container, around every agent command | passed as ``python3 -I -S -c`` |
| ``twinforge_detectors`` (the repository's top-level ``twinforge_detectors/``) | the detector container and the sandbox | mounted under :data:`DETECTOR_MOUNT` (on ``PYTHONPATH``) |
| ``cheats/`` | the task container, as the cheat battery's agents | copied in by the gate |
| ``channel/relay.py`` | the model channel's sidecar (the task container's network namespace) | passed as ``python3 -I -S -c`` |
| ``harness/unwritable.py`` | the task container, before and after an in-container harness | passed as ``python3 -I -S -c`` |
| ``harness/*_command_timeout.*`` | OpenCode (plugin) and Pi (extension), in the task container | written into the CLI's config folder |

``twinforge_detectors`` is the one part that is also imported on the host: it is its own top-level
package (the API detector authors write against, typed and checked like the rest), so its folder
sits beside ``twinforge/`` and is found here through the installed package.
"""

from __future__ import annotations

from pathlib import Path

import twinforge_detectors

HERE = Path(__file__).resolve().parent

SERVICE_PROGRAMS = HERE / "services"
"""Service programs (one per service kind), mounted read-only into each service container."""
SERVICES_MOUNT = "/opt/twinforge/services"
"""Where :data:`SERVICE_PROGRAMS` appears inside a service container."""

COMMAND_WRAPPER = HERE / "wrapper" / "command_tree.py"
"""The command wrapper: runs one agent command and ends its whole process tree at the timeout."""

DETECTOR_PACKAGE = Path(twinforge_detectors.__file__).resolve().parent
"""The detector primitives library's package folder (installed as its own top-level package, so a wheel
carries it once)."""
DETECTOR_MOUNT = "/opt/twinforge/detectors"
"""The ``PYTHONPATH`` entry inside the detector container; the package sits below it."""
DETECTOR_PACKAGE_MOUNT = f"{DETECTOR_MOUNT}/twinforge_detectors"
"""Where :data:`DETECTOR_PACKAGE` is mounted read-only inside the detector container."""

MODEL_CHANNEL_RELAY = HERE / "channel" / "relay.py"
"""The model channel's sidecar: loopback relay to the host proxy and sink of blocked connections."""

UNWRITABLE_FOLDERS = HERE / "harness" / "unwritable.py"
"""Makes a harness's project configuration folders unwritable for one run and gives them back after."""

OPENCODE_COMMAND_TIMEOUT = HERE / "harness" / "opencode_command_timeout.js"
"""OpenCode plugin that caps the bash tool's timeout at the command budget (``__LIMIT_MS__`` filled in)."""
PI_COMMAND_TIMEOUT = HERE / "harness" / "pi_command_timeout.ts"
"""Pi extension that sets and caps the bash tool's timeout at the command budget (``__LIMIT_S__`` filled in)."""

CHEATS = HERE / "cheats"
"""The cheat battery's scripts (``_common.py`` is their shared helper)."""

__all__ = [
    "CHEATS",
    "COMMAND_WRAPPER",
    "DETECTOR_MOUNT",
    "DETECTOR_PACKAGE",
    "DETECTOR_PACKAGE_MOUNT",
    "MODEL_CHANNEL_RELAY",
    "OPENCODE_COMMAND_TIMEOUT",
    "PI_COMMAND_TIMEOUT",
    "SERVICES_MOUNT",
    "SERVICE_PROGRAMS",
    "UNWRITABLE_FOLDERS",
]
