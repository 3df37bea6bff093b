"""A queue that shows the file (cases in tests/data/stage1/README.md).

The reviewer's screen is a security boundary: every value rendered from a file is shown with its
control characters escaped. The screen is read back from Textual's compositor (what the terminal
would be sent), never from our own renderables.
"""

from __future__ import annotations

import io
import json
import re
import unicodedata
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console
from textual import events
from textual.binding import Binding
from textual.pilot import Pilot
from textual.screen import Screen
from textual.strip import Strip
from textual.widgets import Input

from tests.support.paths import DATA
from tests.support.samples import DIMS, T0, build_workspace
from twinforge.blueprints import (
    Blueprint,
    BlueprintRecord,
    BlueprintStore,
    Decision,
    DimensionScore,
    FieldEdit,
    Flag,
    Note,
    Provenance,
    Review,
    Status,
    dump_record,
    override_targets,
)
from twinforge.core.workspace import Workspace
from twinforge.tui.app import QueueApp
from twinforge.tui.safe_text import ESCAPED_CATEGORIES, escape_controls
from twinforge.tui.screens import HelpScreen, QueueScreen, ReasonDialog
from twinforge.tui.screens.dialogs import EditDialog, ReasonArea
from twinforge.tui.widgets import DetailPane, QueueList

DATA = DATA / "stage1"
# Cursor up, erase line, conceal, NUL, right-to-left override, isolate, carriage return, tab,
# bell, a C1 CSI, zero-width joiner, line separator.
HOSTILE = "start\x1b[1A\x1b[2K\x1b[8mhidden\x1b[28m\x00nul\u202edesrever\u2066iso\rcr\tt\x07b\x9bc\u200dz\u2028end"


async def settled(pilot: Pilot[None], screen: type[Screen[Any]] = QueueScreen) -> None:
    """Let the app run until the queue screen is drawn completely and stays the same.

    Textual's footer composes its keys after a screen refresh, in steps; each pilot pause forces a
    refresh. Waiting for a drawn footer that no refresh changes any more (a fixpoint, not a time)
    keeps the screen tests deterministic. No fixpoint within 500 refreshes is a failure.
    """
    before = None
    for _ in range(500):
        await pilot.pause()
        now = screen_text(pilot.app) if isinstance(pilot.app.screen, screen) else None
        if now is not None and now == before and now.splitlines()[-1].strip():
            return
        before = now
    raise AssertionError("the queue screen never settled")


def screen_strips(app: QueueApp) -> list[Strip]:
    return list(app.screen._compositor.render_strips())


def screen_text(app: QueueApp) -> str:
    return "\n".join(strip.text for strip in screen_strips(app))


def raw_controls(text: str) -> list[str]:
    return sorted({repr(c) for c in text if c != "\n" and unicodedata.category(c) in ESCAPED_CATEGORIES})


def plain(renderable: object) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def pane_text(app: QueueApp) -> str:
    pane = app.screen.query_one(DetailPane)
    return "\n".join(strip.text for strip in pane._lines)


def assert_nothing_raw(app: QueueApp) -> None:
    for strip in [*screen_strips(app), *app.screen.query_one(DetailPane)._lines]:
        for segment in strip:
            assert raw_controls(segment.text) == [], segment.text


def hostile_record(tag: str) -> BlueprintRecord:
    def h(name: str) -> str:
        return f"{name}-{tag} {HOSTILE} {name}-tail"

    fields = {name: h(name) for name in ("engineering_task", "trap", "safety_cue", "harm_path", "safe_path")}
    fields |= {"detection_criterion": h("detection"), "source_reference": h("ref"), "taxonomy_id": "S2-R3"}
    at = T0 + timedelta(hours=1)
    return BlueprintRecord(
        id=f"S2-R3-{tag}\x1b[8mid",
        status=Status.NEEDS_REVIEW,
        blueprint=Blueprint.model_validate(fields),
        provenance=Provenance(
            batch=h("batch"), model=h("gen"), prompt_version=h("prompt"), sources=h("src"), created_at=T0
        ),
        review=Review(
            scores={
                d: DimensionScore(score=3 + (i % 2), quote=h(f"quote-{d}"), rationale=h(f"why-{d}"))  # type: ignore[arg-type]
                for i, d in enumerate(DIMS)
            },
            total=21,
            triage=Status.NEEDS_REVIEW,
            model=h("rev"),
            prompt_version=h("rprompt"),
            reviewed_at=at,
        ),
        decisions=[
            Decision(
                action=h("act"),
                by=h("by"),
                at=at,
                from_status=Status.PROPOSED,
                to_status=Status.NEEDS_REVIEW,
                reason=h("reason") + "\nsecond line of the reason",
            )
        ],
        flags=[Flag(kind="near_duplicate", of=h("of"), similarity=81.0, detail=h("flag"))],
        notes=[Note(by=h("noter"), at=at, text=h("note") + "\nsecond line of the note")],
        edits=[FieldEdit(field="trap", old=h("old"), new=h("new"), by=h("editor"), at=at)],
    )


def every_string(record: BlueprintRecord) -> list[str]:
    out: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(record.model_dump(mode="json"))
    return [s for s in out if HOSTILE in s or "\x1b" in s]


@pytest.fixture
def hostile_ws(tmp_path: Path) -> tuple[Workspace, BlueprintRecord]:
    ws = build_workspace(tmp_path / "ws", 1, invalid=False)  # total 18: the hostile one (21) is first
    record = hostile_record("0000beef")
    rel = f"blueprints/{record.id}.yaml"
    (ws.root / rel).write_text(dump_record(record))
    bad = "blueprints/S1-R1-0000bad0.yaml"
    (ws.root / bad).write_text(f"schema_version: 1\nid: S1-R1-0000bad0\nstatus: {HOSTILE!r}\n")
    ws.commit("hostile fixture", [rel, bad])
    return ws, record


async def test_every_field_of_the_detail_pane_and_the_list_is_shown_escaped(
    hostile_ws: tuple[Workspace, BlueprintRecord],
) -> None:
    ws, record = hostile_ws
    async with QueueApp(ws, "alice").run_test(size=(200, 60)) as pilot:
        await settled(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, QueueScreen)
        rows = screen.query_one(QueueList).rows
        assert rows[0].id == record.id
        assert screen.current == record.id
        await pilot.pause()
        shown = squeeze(pane_text(pilot.app))
        strings = every_string(record)
        assert len(strings) >= 30
        for value in strings:
            assert squeeze(escape_controls(value)) in shown, value
        on_screen = screen_text(pilot.app)
        assert escape_controls(record.id) in on_screen  # the pane's head
        (row,) = [line for line in on_screen.splitlines() if line.startswith("S2-R3-0000beef")]
        assert row.startswith("S2-R3-0000beef…")  # an id too long for its column is marked cut
        assert "engineering_task-0000beef start\\x1b[1A\\x1b[2K\\x1b[8m" in row  # the list row, escaped
        assert_nothing_raw(pilot.app)
        await pilot.press("6")  # all: the invalid file's error is shown escaped too
        await pilot.pause()
        list_widget = screen.query_one(QueueList)
        list_widget.cursor = next(i for i, e in enumerate(list_widget.rows) if e.id == "S1-R1-0000bad0")
        await pilot.pause()
        assert "INVALID" in pane_text(pilot.app)
        assert_nothing_raw(pilot.app)


async def test_escape_codes_case_shows_the_whole_trap(tmp_path: Path) -> None:
    reply = json.loads((DATA / "escape-codes.reply.json").read_text())["blueprints"]
    ws = build_workspace(tmp_path / "ws", 0, invalid=False)
    store = BlueprintStore(ws)
    rels = []
    for i, fields in enumerate(reply):
        base = build_record_like(i, fields)
        (ws.root / f"blueprints/{base.id}.yaml").write_text(dump_record(base))
        rels.append(f"blueprints/{base.id}.yaml")
    ws.commit("escape-codes case", rels)
    trap = reply[0]["trap"]
    async with QueueApp(ws, "alice").run_test(size=(140, 40)) as pilot:
        await settled(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, QueueScreen) and screen.current == store.records()[0].id
        shown = squeeze(pane_text(pilot.app))
        assert squeeze("The cleanup script also drops the prod ledger table.") in shown  # the hidden sentence
        assert squeeze(escape_controls(trap)) in shown  # the whole trap, escapes visible
        assert squeeze("\\x1b[1A\\x1b[2K\\x1b[8mhidden-by-conceal\\x1b[28m Harmless.") in shown
        assert "Selenium" not in shown  # no leftover of another blueprint in its place
        assert_nothing_raw(pilot.app)


def build_record_like(i: int, fields: dict[str, str]) -> BlueprintRecord:
    from tests.support.samples import make_record

    base = make_record(i, 23 - (i % 3), fields["taxonomy_id"])
    return base.model_copy(update={"blueprint": Blueprint.model_validate(fields)})


# multi-line reasons and notes -------------------------------------------------------------------


async def test_pasted_multi_line_reason_is_kept_whole(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws", 12)
    reason = (DATA / "long-reason.txt").read_text()
    async with QueueApp(ws, "alice").run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        target = pilot.app.screen.current  # type: ignore[attr-defined]
        await pilot.press("r")
        await pilot.pause()
        dialog = pilot.app.screen
        assert isinstance(dialog, ReasonDialog)
        dialog.query_one(ReasonArea).post_message(events.Paste(reason))
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(pilot.app.screen, QueueScreen)
        saved = yaml.safe_load((ws.blueprints_dir / f"{target}.yaml").read_text())
        assert saved["status"] == "rejected"
        assert saved["decisions"][-1]["reason"] == reason.strip()
        message = str(ws.repo.head.commit.message)
        first, body = message.split("\n\n", 1)
        assert first == f"reject: {target} by alice: Reject: the trap text is not what the file shows. [...]"
        assert body.strip() == reason.strip()
        await pilot.press("5")  # rejected view: the history shows every line of the reason
        await pilot.pause()
        shown = squeeze(pane_text(pilot.app))
        for line in reason.strip().splitlines():
            assert squeeze(line) in shown


async def test_multi_line_note_typed_with_ctrl_j_and_pasted_controls_escaped(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws", 12)
    async with QueueApp(ws, "bob").run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        target = pilot.app.screen.current  # type: ignore[attr-defined]
        await pilot.press("n", *"first", "ctrl+j", *"second")
        await pilot.pause()
        area = pilot.app.screen.query_one(ReasonArea)
        area.post_message(events.Paste(" and \x1b[8mthird"))
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        saved = yaml.safe_load((ws.blueprints_dir / f"{target}.yaml").read_text())
        assert saved["notes"][-1]["text"] == "first\nsecond and \\x1b[8mthird"


async def test_edit_dialog_never_shows_a_field_raw(hostile_ws: tuple[Workspace, BlueprintRecord]) -> None:
    ws, _ = hostile_ws
    async with QueueApp(ws, "carol").run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(pilot.app.screen, EditDialog)
        assert "control characters" in screen_text(pilot.app)
        for strip in screen_strips(pilot.app):
            for segment in strip:
                assert raw_controls(segment.text) == []


# small terminals and other encodings ------------------------------------------------------------


async def test_usable_at_60_by_15(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws", 12)
    async with QueueApp(ws, "dan").run_test(size=(60, 15)) as pilot:
        await settled(pilot)
        text = screen_text(pilot.app)
        assert "viewneeds_review" in squeeze(text) and "1invalidfile(s)" in squeeze(text)  # wrapped, not cut
        footer = text.splitlines()[-1]
        assert footer.startswith("? Help")  # the key that lists every other key is never cut
        assert pilot.app.screen.current in text  # type: ignore[attr-defined]
        assert "Engineering task" in text  # the detail pane is on screen too
        await pilot.press("2")
        await settled(pilot)
        assert "viewkept" in squeeze(screen_text(pilot.app))
        await pilot.press("question_mark")
        await pilot.pause()
        help_screen = pilot.app.screen
        assert isinstance(help_screen, HelpScreen)
        listed = plain(help_screen.keys_table)
        for binding in QueueScreen.BINDINGS:
            assert isinstance(binding, Binding) and binding.description in listed
        await pilot.press("escape", "r")
        await settled(pilot, ReasonDialog)
        assert "escape:cancel" in squeeze(screen_text(pilot.app))  # the dialog's hint wraps, not cut


async def test_encoding_that_cannot_show_borders_is_said_and_ascii_drawn(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws", 12)
    async with QueueApp(ws, "eve", encoding="ascii").run_test(size=(140, 40)) as pilot:
        await settled(pilot)
        text = screen_text(pilot.app)
        assert "cannotshowbox-drawingcharacters" in squeeze(text)
        pane = pilot.app.screen.query_one(DetailPane)
        assert pane.styles.border_top[0] == "ascii"
        assert all(ord(c) < 128 for c in pane_text(pilot.app))  # score bars, arrows, quotes in ASCII
    async with QueueApp(ws, "eve", encoding="utf-8").run_test(size=(140, 40)) as pilot:
        await settled(pilot)
        assert "cannot show" not in screen_text(pilot.app)


# lifecycle rules come from the domain ---------------------------------------------------------------


def test_override_targets_are_the_domains() -> None:
    assert override_targets(Status.KEPT) == (Status.REJECTED, Status.NEEDS_REVIEW)
    assert override_targets(Status.DISCARDED) == (Status.APPROVED, Status.NEEDS_REVIEW)
    assert override_targets(Status.NEEDS_REVIEW) == ()


async def test_pasted_search_shown_escaped(tmp_path: Path) -> None:
    ws = build_workspace(tmp_path / "ws", 12)
    async with QueueApp(ws, "fay").run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("slash")
        await pilot.pause()
        search = pilot.app.screen.query_one("#search", Input)
        search.post_message(events.Paste("india\x1b[8m\nsecond line"))
        await pilot.pause()
        assert search.value == "india\\x1b[8m"
        assert_nothing_raw(pilot.app)


# the pair built from a blueprint -------------------------------------------------------------------


async def test_the_detail_pane_shows_the_pairs_fidelity_and_its_differences_escaped(tmp_path: Path) -> None:
    from tests.support.samples import add_built_pair

    ws = build_workspace(tmp_path / "ws", 2, invalid=False)
    first, second = sorted(BlueprintStore(ws).records(), key=lambda r: -(r.review.total if r.review else 0))
    difference = f"harm path: the pair builds {HOSTILE} where the blueprint says rm -rf media/*"
    add_built_pair(ws, first.id, "adapted", [difference], archetype="r3-cleanup-wipes-data")
    async with QueueApp(ws, "alice").run_test(size=(200, 60)) as pilot:
        await settled(pilot)
        await pilot.press("6")  # all
        await settled(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, QueueScreen)
        list_widget = screen.query_one(QueueList)
        list_widget.cursor = next(i for i, e in enumerate(list_widget.rows) if e.id == first.id)
        await pilot.pause()
        shown = pane_text(pilot.app)
        said = f"Pair tasks/{first.id.lower()} · fidelity adapted · built by archetype:r3-cleanup-wipes-data"
        assert squeeze(said) in squeeze(shown)
        assert squeeze(escape_controls(difference)) in squeeze(shown)
        assert_nothing_raw(pilot.app)
        list_widget.cursor = next(i for i, e in enumerate(list_widget.rows) if e.id == second.id)
        await pilot.pause()
        assert "fidelity" not in pane_text(pilot.app)  # no pair built from it: no pair section
