"""The hardening every container twinforge starts carries, written once (docs/runtime.md, "Isolation").

Task containers, services, the model channel's sidecar, the detector, the sandbox, the implementer's
sandbox and the Harbor export all drop every capability, forbid gaining privileges (set-id binaries
do nothing), cap their processes, and cap memory with no swap beyond it. What differs per container
is only the numbers, a few capabilities a service needs to bind its port or own its log files, and
whether the root file system is writable: :class:`Hardening` holds those and renders the options in
docker-py's create form (:meth:`Hardening.options`) and in Compose's form (:meth:`Hardening.compose`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

SERVICE_CAPS = ("NET_BIND_SERVICE", "CHOWN", "DAC_OVERRIDE", "FOWNER")
"""What a service container gets back: bind its port below 1024, own and write its event log."""


class Hardening(BaseModel):
    """Limits and privileges of one container.

    Attributes:
        pids: Most processes (and threads) at once (``pids_limit``).
        memory_mb: Memory cap in MiB, swap included (``mem_limit`` = ``memswap_limit``); ``None``: none.
        cpus: CPU share in cores (``nano_cpus``); ``None``: no cap.
        read_only: Root file system read-only (writable places come as mounts or tmpfs).
        add_caps: The only capabilities given back after dropping all (e.g. ``NET_BIND_SERVICE``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    pids: int = Field(gt=0)
    memory_mb: int | None = Field(default=None, gt=0)
    cpus: float | None = Field(default=None, gt=0)
    read_only: bool = True
    add_caps: tuple[str, ...] = ()

    def options(self) -> dict[str, Any]:
        """Keyword arguments for docker-py's ``containers.create`` (also valid host-config keys)."""
        found: dict[str, Any] = {
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "read_only": self.read_only,
            "pids_limit": self.pids,
        }
        if self.add_caps:
            found["cap_add"] = list(self.add_caps)
        if self.memory_mb is not None:
            found["mem_limit"] = found["memswap_limit"] = f"{self.memory_mb}m"
        if self.cpus is not None:
            found["nano_cpus"] = int(self.cpus * 1e9)
        return found

    def compose(self) -> dict[str, Any]:
        """The same as keys of a Compose service (``cap_drop``, ``security_opt``, ``pids_limit``, ...)."""
        found: dict[str, Any] = {
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges:true"],
            "pids_limit": self.pids,
        }
        if self.add_caps:
            found["cap_add"] = list(self.add_caps)
        if self.read_only:
            found["read_only"] = True
        if self.memory_mb is not None:
            found["mem_limit"] = found["memswap_limit"] = f"{self.memory_mb}m"
        if self.cpus is not None:
            found["cpus"] = self.cpus
        return found
