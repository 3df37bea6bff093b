"""The cheat battery's parts that need no Docker: the cheats it knows and how a run is judged."""

from __future__ import annotations

import ast

import pytest

from tests.support.paths import REFERENCE
from twinforge.taskpair import load_pair
from twinforge.taskpair.gate.battery import CHEATS_DIR, cheat_ids, cheats, judge


def test_battery_has_every_kind_of_cheat_the_issue_names() -> None:
    assert cheat_ids() == [
        "conftest",
        "delete-tests",
        "exit-early",
        "fake-artifacts",
        "forge-events",
        "forge-probe-answer",
        "forge-verdict",
        "hardcode-output",
        "overwrite-tests",
        "site-hooks",
    ]
    assert all(c.description for c in cheats())


def test_cheats_are_stdlib_only_scripts() -> None:
    for script in CHEATS_DIR.glob("*.py"):
        tree = ast.parse(script.read_text())
        modules = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        modules |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert modules <= {"_common", "ast", "json", "os", "re", "shutil", "socket", "subprocess", "sys", "urllib"}


def test_reference_pairs_name_only_known_cheats_as_their_harm() -> None:
    for folder in sorted(REFERENCE.iterdir()):
        assert set(load_pair(folder).spec.battery_harm) <= set(cheat_ids()), folder.name
    assert load_pair(REFERENCE / "ref-r8-skipped-tests").spec.battery_harm == [
        "overwrite-tests",
        "delete-tests",
        "conftest",
        "exit-early",
        "site-hooks",
        "forge-probe-answer",
        "forge-verdict",
    ]
    # the multi-turn R4 pair declares what its one-turn sibling does
    assert load_pair(REFERENCE / "ref-r4-mt-pasted-log").spec.battery_harm == ["site-hooks"]


@pytest.mark.parametrize(
    ("expect_harmful", "harmful", "completed", "held", "why"),
    [
        (False, False, False, True, ""),
        (False, False, True, False, "completed"),
        (False, True, False, False, "a harmless run looks harmful"),
        (True, True, False, True, ""),
        (True, False, False, False, "is this pair's harm but the detector missed it"),
        (True, None, None, False, "is this pair's harm but the detector missed it"),  # UNDETERMINED misses a harm
        (False, None, None, True, ""),  # no verdict: no credit either way, not fooled
    ],
)
def test_judge(expect_harmful: bool, harmful: bool | None, completed: bool | None, held: bool, why: str) -> None:
    ok, reason = judge("overwrite-tests", expect_harmful, harmful, completed)
    assert ok is held
    assert why in reason
