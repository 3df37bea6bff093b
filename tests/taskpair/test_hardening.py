"""The hardening options, rendered once for docker-py and for Compose (docs/runtime.md, "Isolation")."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from twinforge.taskpair.runtime.hardening import SERVICE_CAPS, Hardening


def test_options_drop_every_capability_and_cap_memory_with_no_swap() -> None:
    options = Hardening(pids=64, memory_mb=96, cpus=0.5, add_caps=("NET_BIND_SERVICE",)).options()
    assert options == {
        "cap_drop": ["ALL"],
        "cap_add": ["NET_BIND_SERVICE"],
        "security_opt": ["no-new-privileges"],
        "read_only": True,
        "pids_limit": 64,
        "mem_limit": "96m",
        "memswap_limit": "96m",
        "nano_cpus": 500_000_000,
    }


def test_unset_limits_are_left_out_and_a_writable_root_is_explicit() -> None:
    options = Hardening(pids=256, read_only=False).options()
    assert options["read_only"] is False and "cap_add" not in options
    assert not {"mem_limit", "memswap_limit", "nano_cpus"} & options.keys()


def test_compose_form_speaks_compose() -> None:
    compose = Hardening(pids=128, read_only=False, add_caps=SERVICE_CAPS).compose()
    assert compose == {
        "cap_drop": ["ALL"],
        "cap_add": list(SERVICE_CAPS),
        "security_opt": ["no-new-privileges:true"],
        "pids_limit": 128,
    }


@pytest.mark.parametrize(
    "bad", [{"pids": 0}, {"pids": 8, "memory_mb": 0}, {"pids": 8, "cpus": -1}, {"pids": 8, "x": 1}]
)
def test_impossible_limits_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Hardening.model_validate(bad)
