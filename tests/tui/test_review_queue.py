"""Pilot tests of the review queue: every action by its key, asserting on files and git log."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from rich.console import Console
from textual.widgets import Static

from tests.support.samples import build_workspace
from twinforge.blueprints import BlueprintStore, Entry, Status
from twinforge.core.workspace import Workspace
from twinforge.tui.app import QueueApp
from twinforge.tui.review_queue import ReviewQueue
from twinforge.tui.screens import EditDialog, HelpScreen, OverrideDialog, QueueScreen, ReasonDialog
from twinforge.tui.screens.loading import LoadingScreen
from twinforge.tui.widgets import DetailPane, QueueList, row_text

SIZE = (140, 40)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return build_workspace(tmp_path / "ws", 12)


def screen(app: QueueApp) -> QueueScreen:
    assert isinstance(app.screen, QueueScreen)
    return app.screen


def listed(app: QueueApp) -> list[Entry]:
    return screen(app).query_one(QueueList).rows


def status_line(app: QueueApp) -> str:
    return str(screen(app).query_one("#status-line", Static).render())


def plain(renderable: object) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def head(ws: Workspace) -> str:
    return str(ws.repo.head.commit.message)


def data(ws: Workspace, blueprint_id: str) -> dict:  # type: ignore[type-arg]
    return yaml.safe_load((ws.blueprints_dir / f"{blueprint_id}.yaml").read_text())


async def test_starts_on_needs_review_sorted_by_total(ws: Workspace) -> None:
    async with QueueApp(ws, "alice").run_test(size=SIZE) as pilot:
        await pilot.pause()
        rows = listed(pilot.app)
        assert [r.status for r in rows] == ["needs_review"] * 6
        assert [r.total for r in rows] == [23, 22, 21, 20, 19, 18]
        assert "0 of 6 reviewed" in status_line(pilot.app)
        assert "1 invalid file(s)" in status_line(pilot.app)
        assert screen(pilot.app).current == rows[0].id


async def test_approve_writes_commits_and_advances(ws: Workspace) -> None:
    async with QueueApp(ws, "alice").run_test(size=SIZE) as pilot:
        await pilot.pause()
        first, second = (e.id for e in listed(pilot.app)[:2])
        await pilot.press("a")
        await pilot.pause()
        # Saved and committed before the screen shows it as made.
        saved = data(ws, first)
        assert saved["status"] == "approved"
        decision = saved["decisions"][-1]
        assert (decision["action"], decision["by"], decision["from_status"]) == ("approve", "alice", "needs_review")
        assert decision["at"]
        assert head(ws) == f"approve: {first} by alice"
        assert not ws.repo.is_dirty(untracked_files=True)
        assert screen(pilot.app).current == second  # the row left the view; the next one is shown
        assert "1 of 6 reviewed" in status_line(pilot.app)


async def test_reject_requires_a_reason(ws: Workspace) -> None:
    async with QueueApp(ws, "bob").run_test(size=SIZE) as pilot:
        await pilot.pause()
        target = screen(pilot.app).current
        assert target is not None
        before = head(ws)
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ReasonDialog)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ReasonDialog)
        assert "a reason is required" in str(pilot.app.screen.query_one(".error", Static).render())
        assert head(ws) == before and data(ws, target)["status"] == "needs_review"
        await pilot.press(*"trap is avoidable", "enter")
        await pilot.pause()
        assert isinstance(pilot.app.screen, QueueScreen)
        saved = data(ws, target)
        assert saved["status"] == "rejected"
        assert saved["decisions"][-1]["reason"] == "trap is avoidable"
        assert head(ws) == f"reject: {target} by bob: trap is avoidable"


async def test_edit_field_validated_and_old_value_kept(ws: Workspace) -> None:
    async with QueueApp(ws, "carol").run_test(size=SIZE) as pilot:
        await pilot.pause()
        target = screen(pilot.app).current
        assert target is not None
        old_task = data(ws, target)["blueprint"]["engineering_task"]
        await pilot.press("e")
        await pilot.pause()
        dialog = pilot.app.screen
        assert isinstance(dialog, EditDialog)
        area = dialog.query_one("#value")
        area.text = "short"  # type: ignore[attr-defined]
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(pilot.app.screen, EditDialog)
        assert "engineering_task" in str(dialog.query_one(".error", Static).render())
        assert data(ws, target)["blueprint"]["engineering_task"] == old_task
        area.text = "Fix the flaky nightly export job of the billing service"  # type: ignore[attr-defined]
        await pilot.press("ctrl+s")
        await pilot.pause()
        saved = data(ws, target)
        assert saved["blueprint"]["engineering_task"] == "Fix the flaky nightly export job of the billing service"
        assert saved["edits"][-1]["old"] == old_task
        assert saved["edits"][-1]["by"] == "carol"
        assert head(ws) == f"edit: {target} engineering_task by carol"


async def test_note_and_undo(ws: Workspace) -> None:
    async with QueueApp(ws, "dan").run_test(size=SIZE) as pilot:
        await pilot.pause()
        target = screen(pilot.app).current
        assert target is not None
        original = (ws.blueprints_dir / f"{target}.yaml").read_bytes()
        await pilot.press("n", *"check the cue", "enter")
        await pilot.pause()
        assert data(ws, target)["notes"][-1]["text"] == "check the cue"
        assert head(ws) == f"note: {target} by dan"
        await pilot.press("u")
        await pilot.pause()
        assert (ws.blueprints_dir / f"{target}.yaml").read_bytes() == original
        assert head(ws) == f"undo: note on {target} by dan"
        await pilot.press("a", "u")
        await pilot.pause()
        assert (ws.blueprints_dir / f"{target}.yaml").read_bytes() == original
        assert screen(pilot.app).current == target  # back in the queue after undoing the approval
        messages = [str(c.message) for c in ws.repo.iter_commits()][:4]
        assert messages == [
            f"undo: approve on {target} by dan",
            f"approve: {target} by dan",
            f"undo: note on {target} by dan",
            f"note: {target} by dan",
        ]
        await pilot.press("u")
        await pilot.pause()
        assert head(ws) == f"undo: approve on {target} by dan"  # nothing left to undo


async def test_override_kept_needs_reason(ws: Workspace) -> None:
    async with QueueApp(ws, "erin").run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("o")  # needs_review is not overridable
        await pilot.pause()
        assert isinstance(pilot.app.screen, QueueScreen)
        await pilot.press("2")
        await pilot.pause()
        assert "view kept" in status_line(pilot.app)
        target = screen(pilot.app).current
        assert target is not None and data(ws, target)["status"] == "kept"
        await pilot.press("o")
        await pilot.pause()
        assert isinstance(pilot.app.screen, OverrideDialog)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(pilot.app.screen, OverrideDialog)
        await pilot.press(*"duplicate of an admitted pair", "enter")
        await pilot.pause()
        saved = data(ws, target)
        assert saved["status"] == "rejected"
        assert (saved["decisions"][-1]["action"], saved["decisions"][-1]["reason"]) == (
            "override",
            "duplicate of an admitted pair",
        )
        assert head(ws) == f"override: {target} kept -> rejected by erin: duplicate of an admitted pair"


async def test_navigation_views_sort_search(ws: Workspace) -> None:
    async with QueueApp(ws, "fay").run_test(size=SIZE) as pilot:
        await pilot.pause()
        first = screen(pilot.app).current
        await pilot.press("j")
        await pilot.pause()
        second = screen(pilot.app).current
        assert second != first and second == listed(pilot.app)[1].id
        await pilot.press("k")
        await pilot.pause()
        assert screen(pilot.app).current == first
        await pilot.press("6")
        await pilot.pause()
        assert len(listed(pilot.app)) == 13  # 12 blueprints + the invalid file
        await pilot.press("s")
        await pilot.pause()
        cells = [str(e.cell) for e in listed(pilot.app)]
        assert "sort cell" in status_line(pilot.app) and cells[:12] == sorted(cells[:12])
        await pilot.press("s")
        await pilot.pause()
        created = [str(e.created_at) for e in listed(pilot.app)[:12]]
        assert created == sorted(created)
        await pilot.press("slash", *"india metrics")
        await pilot.pause()
        ids = [e.id for e in listed(pilot.app)]
        store = BlueprintStore(ws)
        expected = sorted(
            r.id
            for r in store.records()
            if "india metrics" in " ".join(str(v) for v in r.blueprint.model_dump().values()).lower()
        )
        assert sorted(ids) == expected and 0 < len(ids) < 12
        await pilot.press("escape")
        await pilot.pause()
        assert len(listed(pilot.app)) == 13
        await pilot.press("v")
        await pilot.pause()
        assert "view refused" in status_line(pilot.app)
        await pilot.press("v")
        await pilot.pause()
        assert "view needs_review" in status_line(pilot.app)


async def test_conflict_refused_and_reloaded(ws: Workspace) -> None:
    async with QueueApp(ws, "alice").run_test(size=SIZE) as pilot:
        await pilot.pause()
        target = screen(pilot.app).current
        assert target is not None
        other = ReviewQueue(Workspace.open(ws.root), "bob")  # a second reviewer, same workspace
        other.load()
        other.reject(target, "bob was faster")
        other.close()
        await pilot.press("a")
        await pilot.pause()
        saved = data(ws, target)
        assert saved["status"] == "rejected" and saved["decisions"][-1]["by"] == "bob"  # nothing overwritten
        assert head(ws) == f"reject: {target} by bob: bob was faster"
        assert target not in [e.id for e in listed(pilot.app)]
        assert "1 of 6 reviewed" in status_line(pilot.app)  # the entry was reloaded


async def test_invalid_file_listed_marked_and_not_actionable(ws: Workspace) -> None:
    async with QueueApp(ws, "gus").run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("6")
        await pilot.pause()
        rows = listed(pilot.app)
        bad = next(i for i, r in enumerate(rows) if r.id == "S1-R1-badbadba")
        assert rows[bad].status is None and rows[bad].error
        screen(pilot.app).query_one(QueueList).cursor = bad
        await pilot.pause()
        assert "INVALID" in plain(row_text(rows[bad]))
        body = plain(screen(pilot.app).query_one(DetailPane).shown)
        assert "does not validate" in body
        assert "blueprint: Field required" in body
        before = head(ws)
        await pilot.press("a")
        await pilot.pause()
        assert head(ws) == before


async def test_help_lists_bindings(ws: Workspace) -> None:
    async with QueueApp(ws, "hal").run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(pilot.app.screen, HelpScreen)
        text = plain(pilot.app.screen.keys_table)
        for word in ("Approve", "Reject", "Edit", "Note", "Override", "Undo", "Search"):
            assert word in text
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(pilot.app.screen, QueueScreen)


async def test_reviewer_defaults_to_git_user_name(ws: Workspace) -> None:
    async with QueueApp(ws).run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        assert head(ws).endswith("by fixture")


def test_decision_survives_kill(ws: Workspace) -> None:
    """A decision written but not committed (process killed in between) is committed on next start."""
    session = ReviewQueue(ws, "ivy")
    session.load()
    target = session.rows()[0].id
    record = session.open(target)
    record.move(Status.APPROVED, action="approve", by="ivy")
    session.store.write(record)  # the write happened, the commit did not
    session.close()
    again = ReviewQueue(Workspace.open(ws.root), "ivy")
    again.load()
    assert again.entry(target).status == "approved"
    assert not ws.repo.is_dirty(untracked_files=True)
    again.close()


async def test_long_reindex_runs_behind_a_progress_bar(ws: Workspace) -> None:
    """Deterministic: waits for the loading worker itself, never for a time (docs/calibration.md)."""
    app = QueueApp(ws, "kim", background_over=5)  # 13 changed files > 5: load in a thread
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()  # the worker pushes the queue screen before it ends
        await pilot.pause()
        loading, queue = app.screen_stack[-2:]
        assert isinstance(loading, LoadingScreen) and isinstance(queue, QueueScreen)
        assert loading.bar.progress == loading.total == 13  # every changed file went through the bar
        assert len(listed(app)) == 6
        assert app.session.stale() == 0  # indexed now; the next start is immediate


async def test_invalid_transitions_and_vanished_files_do_not_crash(ws: Workspace) -> None:
    async with QueueApp(ws, "lee").run_test(size=SIZE) as pilot:
        await pilot.pause()
        target = screen(pilot.app).current
        assert target is not None
        await pilot.press("r", *"no", "enter")
        await pilot.pause()
        await pilot.press("5")  # rejected view
        await pilot.pause()
        assert screen(pilot.app).current == target
        await pilot.press("r", *"again", "enter")  # rejected -> rejected is not a transition
        await pilot.pause()
        assert isinstance(pilot.app.screen, ReasonDialog)
        assert "cannot go from rejected to rejected" in str(pilot.app.screen.query_one(".error", Static).render())
        await pilot.press("escape", "1")
        await pilot.pause()
        victim = screen(pilot.app).current
        assert victim is not None
        (ws.blueprints_dir / f"{victim}.yaml").unlink()
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(pilot.app.screen, QueueScreen)
        assert victim not in [e.id for e in listed(pilot.app)]  # reloaded: the file is gone
        other = screen(pilot.app).current
        assert other is not None
        (ws.blueprints_dir / f"{other}.yaml").write_text("id: [broken\n")
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(pilot.app.screen, QueueScreen)


async def test_conflict_shows_the_other_reviewers_text_before_any_new_action(ws: Workspace) -> None:
    async with QueueApp(ws, "alice").run_test(size=SIZE) as pilot:
        await pilot.pause()
        target = screen(pilot.app).current
        assert target is not None
        other = ReviewQueue(Workspace.open(ws.root), "bob")
        other.load()
        other.edit(target, "harm_path", "Bob rewrote the harm path completely")
        other.close()
        await pilot.press("a")  # refused: alice never saw bob's text
        await pilot.pause()
        assert data(ws, target)["status"] == "needs_review"
        assert "Bob rewrote the harm path completely" in plain(screen(pilot.app).query_one(DetailPane).shown)
        await pilot.press("a")  # now she has seen it
        await pilot.pause()
        assert data(ws, target)["status"] == "approved"
