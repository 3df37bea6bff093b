"""A harness is a name, a version and a mode (docs/calibration.md, "Harnesses")."""

from __future__ import annotations

from importlib import metadata

import pytest

from twinforge.harness import make_harness
from twinforge.harness.exceptions import HarnessError
from twinforge.harness.install import PACKAGES
from twinforge.harness.naming import HarnessSpec, parse_harnesses, upgrade_key
from twinforge.runs.results import HarnessChoice

MINI = metadata.version("mini-swe-agent")


def test_name_version_and_mode_with_defaults_filled_in() -> None:
    assert str(HarnessSpec.parse("claude-code@2.1.220:default")) == "claude-code@2.1.220:default"
    codex = HarnessSpec.parse("codex:workspace-write")
    assert (codex.version, codex.mode, codex.strict) == (PACKAGES["codex"].version, "workspace-write", True)
    mini = HarnessSpec.parse("mini-swe-agent")
    assert str(mini) == f"mini-swe-agent@{MINI}:bypass" and not mini.strict
    assert HarnessSpec.parse("opencode@1.19.0").version == "1.19.0"  # any npm version of a CLI may be installed


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("codex[workspace-write]", "not name[@version][:mode]"),
        ("claude-code:workspace-write", "valid: bypass, default"),
        ("pi:default", "valid: bypass"),
        ("cursor", "valid: mini-swe-agent, claude-code, codex, opencode, pi"),
        ("mini-swe-agent@2.4.2", f"this install has {MINI}"),
    ],
)
def test_a_wrong_harness_is_one_line_saying_what_is_valid(text: str, said: str) -> None:
    with pytest.raises(HarnessError) as raised:
        HarnessSpec.parse(text)
    assert said in str(raised.value)


def test_lists_and_all() -> None:
    every = parse_harnesses("all")
    assert [s.name for s in every] == ["mini-swe-agent", "claude-code", "codex", "opencode", "pi"]
    assert all(s.mode == "bypass" for s in every)
    both = parse_harnesses("claude-code, claude-code:default")
    assert [str(s) for s in both] == [
        f"claude-code@{PACKAGES['claude-code'].version}:{m}" for m in ("bypass", "default")
    ]
    with pytest.raises(HarnessError, match="named twice"):
        parse_harnesses("pi,pi:bypass")
    with pytest.raises(HarnessError, match="no harness named"):
        parse_harnesses(" , ")


def test_the_record_key_names_version_and_mode() -> None:
    strict = HarnessChoice.of(HarnessSpec.parse("claude-code:default"))
    assert strict.key() == f"claude-code@{PACKAGES['claude-code'].version}:default"
    assert (
        make_harness("codex", permission="workspace-write").key == f"codex@{PACKAGES['codex'].version}:workspace-write"
    )
    mini = HarnessChoice.of(HarnessSpec.parse("mini-swe-agent"), "text", grammar=True)
    assert mini.key() == f"mini-swe-agent@{MINI}:bypass[text,grammar]"
    assert HarnessChoice(name="pi").key() == f"pi@{PACKAGES['pi'].version}:bypass"  # defaults filled in


def test_keys_of_an_earlier_release_are_upgraded() -> None:
    assert upgrade_key("codex@0.146.0[bypass]") == "codex@0.146.0:bypass"
    assert upgrade_key("claude-code@2.1.220[default]") == "claude-code@2.1.220:default"
    assert upgrade_key("mini-swe-agent[text,grammar]") == f"mini-swe-agent@{MINI}:bypass[text,grammar]"
    assert upgrade_key(f"mini-swe-agent@{MINI}:bypass[text]") is None  # current
    assert upgrade_key("terminus-2@2.0.0") is None  # someone else's key (a Harbor import) stays
