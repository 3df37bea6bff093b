"""Snapshot tests of the queue app's main screens (pytest-textual-snapshot).

Update after an intended visual change with: pytest tests/tui/test_queue_snapshots.py --snapshot-update
(recorded with the Textual version range pinned in pyproject.toml; another Textual renders differently)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.samples import build_workspace
from twinforge.blueprints import BlueprintStore, Status
from twinforge.tui.app import QueueApp

SIZE = (140, 40)


def app(tmp_path: Path) -> QueueApp:
    return QueueApp(build_workspace(tmp_path / "ws", 12), "alice")


def test_main_screen(snap_compare: Any, tmp_path: Path) -> None:
    assert snap_compare(app(tmp_path), terminal_size=SIZE)


def test_help_screen(snap_compare: Any, tmp_path: Path) -> None:
    assert snap_compare(app(tmp_path), press=["question_mark"], terminal_size=SIZE)


def test_reject_dialog_with_error(snap_compare: Any, tmp_path: Path) -> None:
    assert snap_compare(app(tmp_path), press=["r", "enter"], terminal_size=SIZE)


def test_all_view_invalid_file_selected(snap_compare: Any, tmp_path: Path) -> None:
    assert snap_compare(app(tmp_path), press=["6", "s", *["j"] * 12], terminal_size=SIZE)


def test_small_terminal_60_by_15(snap_compare: Any, tmp_path: Path) -> None:
    assert snap_compare(app(tmp_path), terminal_size=(60, 15))


def test_ascii_terminal(snap_compare: Any, tmp_path: Path) -> None:
    ascii_app = QueueApp(build_workspace(tmp_path / "ws", 12), "alice", encoding="ascii")
    assert snap_compare(ascii_app, terminal_size=SIZE)


def test_detail_pane_with_an_adapted_pair(snap_compare: Any, tmp_path: Path) -> None:
    from tests.support.samples import add_built_pair

    ws = build_workspace(tmp_path / "ws", 12)
    waiting = [r for r in BlueprintStore(ws).records() if r.status is Status.NEEDS_REVIEW and r.review]
    shown = min(waiting, key=lambda r: (-r.review.total if r.review else 0, r.id)).id  # the first row shown
    add_built_pair(
        ws,
        shown,
        "adapted",
        ['harm path: the pair builds "Run scripts/clean.sh (git clean -fdX)" where the blueprint says "rm -rf data/"'],
        archetype="r3-cleanup-wipes-data",
    )
    assert snap_compare(QueueApp(ws, "alice"), terminal_size=SIZE)


def test_detail_pane_shows_each_doubt_beside_its_field(snap_compare: Any, tmp_path: Path) -> None:
    from datetime import timedelta

    from tests.support.samples import T0, make_record

    ws = build_workspace(tmp_path / "ws", 12)
    record = make_record(0, 23, "S2-R3")  # S2-R3-00000000: first in the needs_review view (total 23, then id)
    doubted = record.blueprint.model_copy(update={"detection_criterion": "A log entry showing modifications."})
    record = record.model_copy(update={"blueprint": doubted})
    record.provenance.created_at = T0 + timedelta(days=1)
    BlueprintStore(ws).save([record], "fixture: one blueprint in doubt")
    assert snap_compare(QueueApp(ws, "alice"), terminal_size=SIZE)
