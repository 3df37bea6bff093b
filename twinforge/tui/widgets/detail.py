"""The detail pane: eight fields and later user turns with their doubts, the pair, scores, band, history.

A multi-turn blueprint's later turns are shown after the eight fields, risk side and twin. A refused
proposal is shown with each defect beside its field and the reply it came from.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from twinforge.blueprints import (
    FIELDS,
    BlueprintRecord,
    BuiltPair,
    Entry,
    Finding,
    FollowUp,
    RefusedRecord,
    check_blueprint,
    follow_up_findings,
)
from twinforge.blueprints.turns import FIELD as TURNS_FIELD
from twinforge.tui.glyphs import UNICODE, Glyphs
from twinforge.tui.safe_text import safe_text

_BAND_STYLE = {"kept": "green", "needs_review": "yellow", "discarded": "red"}
_FIDELITY_STYLE = {"exact": "green", "adapted": "yellow"}
_LABELS = {
    "engineering_task": "Engineering task",
    "trap": "Trap",
    "safety_cue": "Safety cue",
    "harm_path": "Harm path",
    "safe_path": "Safe path",
    "detection_criterion": "Detection criterion",
    "source_reference": "Source reference",
    "taxonomy_id": "Taxonomy cell",
}


def score_bar(score: int, glyphs: Glyphs = UNICODE) -> Text:
    """``█████`` style bar for a 1-5 score, coloured by value."""
    style = "green" if score >= 4 else "yellow" if score == 3 else "red"
    return Text(glyphs.full * score, style=style) + Text(glyphs.empty * (5 - score), style="grey50") + Text(f" {score}")


def _quoted(text: str, glyphs: Glyphs, style: str = "italic") -> Text:
    """A reason or note in quotes, every line of it, controls escaped."""
    return (
        Text("  ")
        + Text(glyphs.open_quote, style=style)
        + safe_text(text, style)
        + Text(glyphs.close_quote, style=style)
    )


def _finding_lines(findings: list[Finding], glyphs: Glyphs) -> list[Text]:
    """One line per finding, a defect in red and a doubt in yellow, with its rule and hint."""
    out = []
    for f in findings:
        style = "red" if f.is_defect else "yellow"
        kind = "defect" if f.is_defect else "doubt"
        out.append(safe_text(f"  {glyphs.cross} {kind}: {f.message} ({f.rule})", style))
        out.append(safe_text(f"    {f.hint}", "grey50"))
    return out


def _fields(values: dict[str, str | None], findings: list[Finding], glyphs: Glyphs) -> list[RenderableType]:
    """The eight fields, each followed by the findings about it; findings about the whole blueprint first."""
    parts: list[RenderableType] = []
    whole = [f for f in findings if f.field not in values and f.field != TURNS_FIELD]
    if whole:
        parts.extend(_finding_lines(whole, glyphs))
    for name in FIELDS:
        parts.append(Text(""))
        parts.append(Text(_LABELS[name], style="bold underline"))
        value = values.get(name)
        parts.append(safe_text(value) if value is not None else Text("(missing)", style="italic red"))
        parts.extend(_finding_lines([f for f in findings if f.field == name], glyphs))
    return parts


def _turns(follow_ups: list[FollowUp], findings: list[Finding], glyphs: Glyphs) -> list[RenderableType]:
    """The later user turns of a multi-turn blueprint, risk side and twin, then the findings about them.

    Nothing about a blueprint is hidden: the turn where a multi-turn trap sits is one of these
    (docs/stage1.md, "Multi-turn blueprints").
    """
    about = [f for f in findings if f.field == TURNS_FIELD]
    if not follow_ups and not about:
        return []
    parts: list[RenderableType] = [Text(""), Text(f"Later user turns ({len(follow_ups)})", style="bold underline")]
    for number, turn in enumerate(follow_ups, 2):
        parts.append(Text(f"Turn {number} (send: {turn.send})", style="bold"))
        parts.append(Text("  says: ", style="grey50") + safe_text(turn.says))
        parts.append(Text("  twin says: ", style="grey50") + safe_text(turn.twin_says))
    parts.extend(_finding_lines(about, glyphs))
    return parts


def _history(record: BlueprintRecord, glyphs: Glyphs) -> list[Text]:
    events: list[tuple[str, Text]] = []
    for d in record.decisions:
        line = Text(f"{d.at:%Y-%m-%d %H:%M}  ") + safe_text(d.by) + Text(": ") + safe_text(d.action)
        line += Text(f" {d.from_status.value} {glyphs.arrow} {d.to_status.value}")
        if d.reason:
            line += _quoted(d.reason, glyphs)
        if d.overrode:
            line += safe_text(f" (overrode: {', '.join(d.overrode)})", "yellow")
        events.append((d.at.isoformat(), line))
    for n in record.notes:
        line = Text(f"{n.at:%Y-%m-%d %H:%M}  ") + safe_text(n.by) + Text(": note") + _quoted(n.text, glyphs, "")
        events.append((n.at.isoformat(), line))
    for e in record.edits:
        line = Text(f"{e.at:%Y-%m-%d %H:%M}  ") + safe_text(e.by) + Text(": edited ") + safe_text(e.field)
        line += Text(" from") + _quoted(e.old, glyphs, "") + Text(" to") + _quoted(e.new, glyphs, "")
        events.append((e.at.isoformat(), line))
    return [line for _, line in sorted(events, key=lambda pair: pair[0])]


def _pair(pair: BuiltPair, glyphs: Glyphs) -> list[Text]:
    """The pair built from the blueprint: where, by what, and how faithfully (docs/implementer.md, "Fidelity")."""
    sep = glyphs.separator
    line = (
        Text("Pair  ", style="bold underline")
        + safe_text(f"tasks/{pair.pair}", "bold")
        + Text(sep, style="grey50")
        + Text(f"fidelity {pair.fidelity}", style=f"bold {_FIDELITY_STYLE.get(pair.fidelity, '')}")
        + Text(sep, style="grey50")
        + safe_text(f"built by {pair.built_by}", "grey50")
    )
    if pair.admitted:
        line += Text(sep, style="grey50") + Text("admitted", style="bold green")
    return [line, *(safe_text(f"  {glyphs.arrow} {d}", "yellow") for d in pair.differences)]


def render_record(record: BlueprintRecord, glyphs: Glyphs = UNICODE, pair: BuiltPair | None = None) -> RenderableType:
    """Everything a reviewer needs about one blueprint, as one rich renderable.

    Every value read from the file is shown through :func:`~twinforge.tui.safe_text.safe_text`: control
    characters escaped, line breaks kept, no markup.

    Args:
        record: The blueprint.
        glyphs: The terminal's glyph set.
        pair: The pair in ``tasks/`` built from it, when there is one: its fidelity and, for an
            ``adapted`` pair, what it builds differently, one line per field.
    """
    parts: list[RenderableType] = []
    head = (
        safe_text(record.id, "bold") + Text(glyphs.separator, style="grey50") + Text(record.status.value, "bold cyan")
    )
    parts.append(head)
    for flag in record.flags:
        parts.append(
            Text(f"{glyphs.flag} {flag.kind} of ", style="bold magenta")
            + safe_text(flag.of, "bold magenta")
            + Text(f" ({flag.similarity:.0f}%): ", style="bold magenta")
            + safe_text(flag.detail, "bold magenta")
        )
    bp = record.blueprint
    # Live: the same rules the generator and the reviewer use, so a person's edit is checked again.
    findings = [*check_blueprint(bp), *follow_up_findings(bp, record.follow_ups)]
    parts.extend(_fields({name: str(getattr(bp, name)) for name in FIELDS}, findings, glyphs))
    parts.extend(_turns(record.follow_ups, findings, glyphs))
    if pair is not None:
        parts.append(Text(""))
        parts.extend(_pair(pair, glyphs))
    parts.append(Text(""))
    if record.review is None:
        parts.append(Text("Not reviewed yet.", style="italic"))
    else:
        review = record.review
        band = review.triage.value
        parts.append(
            Text("Review  ", style="bold underline")
            + Text(f"total {review.total}/{5 * len(review.scores)}  ", style="bold")
            + Text(band, style=f"bold {_BAND_STYLE.get(band, '')}")
            + Text("  (", style="grey50")
            + safe_text(f"{review.model}, {review.prompt_version}", "grey50")
            + Text(")", style="grey50")
        )
        scores = Table.grid(padding=(0, 1))
        scores.add_column(no_wrap=True)
        scores.add_column(no_wrap=True)
        scores.add_column(ratio=1, overflow="fold")  # a long rationale wraps, never cut
        for dim, value in review.scores.items():
            why = safe_text(value.rationale, "grey70")
            if value.quote:  # what the reviewer cited of the blueprint, before its rationale
                why = (
                    Text(glyphs.open_quote, style="italic")
                    + safe_text(value.quote, "italic")
                    + Text(glyphs.close_quote + " ", style="italic")
                    + why
                )
            if value.cap is not None:
                why += safe_text(f"  [capped from {value.cap.model_score}: {', '.join(value.cap.rules)}]", "yellow")
            scores.add_row(safe_text(dim), score_bar(value.score, glyphs), why)
        parts.append(scores)
    if record.decisions or record.notes or record.edits:
        parts.append(Text(""))
        parts.append(Text("History", style="bold underline"))
        parts.extend(_history(record, glyphs))
    prov = record.provenance
    parts.append(Text(""))
    sep = glyphs.separator
    parts.append(
        safe_text(f"batch {prov.batch}{sep}{prov.model}{sep}{prov.prompt_version}{sep}", "grey50")
        + Text(f"{prov.created_at:%Y-%m-%d %H:%M}", style="grey50")
        + safe_text(f"{sep}sources {prov.sources}", "grey50")
    )
    return Group(*parts)


def render_refused(record: RefusedRecord, glyphs: Glyphs = UNICODE) -> RenderableType:
    """A refused proposal: its fields as given with each defect and doubt beside its field, and the reply.

    Nothing can be decided on it here: ``twinforge blueprint check --stored --release`` releases it
    once today's checks find no defect (docs/stage1.md, "Nothing proposed is lost").
    """
    prov = record.provenance
    sep = glyphs.separator
    parts: list[RenderableType] = [
        safe_text(record.id, "bold") + Text(sep, style="grey50") + Text("refused", "bold red"),
        safe_text(
            f"refused {record.refused_at:%Y-%m-%d %H:%M} by {', '.join(sorted({f.rule for f in record.defects}))}; "
            "twinforge blueprint check --stored --release releases it once no defect is left",
            "grey50",
        ),
    ]
    values: dict[str, str | None] = {name: record.fields.get(name) for name in FIELDS}
    parts.extend(_fields(values, record.findings, glyphs))
    parts.extend(_turns(record.follow_ups, record.findings, glyphs))
    parts += [Text(""), Text("Model reply", style="bold underline"), safe_text(record.reply, "grey70"), Text("")]
    parts.append(
        safe_text(f"batch {prov.batch}{sep}{prov.model}{sep}{prov.prompt_version}{sep}", "grey50")
        + Text(f"{prov.created_at:%Y-%m-%d %H:%M}", style="grey50")
        + safe_text(f"{sep}sources {prov.sources}", "grey50")
    )
    return Group(*parts)


def render_invalid(entry: Entry) -> RenderableType:
    """An invalid file: its name and the validation error, so the reviewer can fix it."""
    return Group(
        safe_text(entry.name, "bold red") + Text("  INVALID", style="bold red"),
        Text(""),
        Text("This file does not validate and cannot be reviewed until it is fixed:", style="bold"),
        safe_text(entry.error or ""),
    )


class DetailPane(ScrollView, can_focus=True):
    """A scrollable pane showing one blueprint.

    The renderable is laid out into lines once per show (and per resize); scrolling and repaints
    only copy lines, and a new blueprint never triggers a screen re-layout.
    """

    shown: RenderableType = ""
    """What the pane currently shows."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._lines: list[Strip] = []

    def show(self, renderable: RenderableType) -> None:
        """Replace the content and scroll to the top."""
        self.shown = renderable
        self._layout()
        self.scroll_to(0, 0, animate=False)
        self.refresh()

    def _layout(self) -> None:
        width = max(self.scrollable_content_region.width, 20)
        options = self.app.console.options.update_width(width)
        lines = self.app.console.render_lines(self.shown, options, style=self.rich_style, pad=True)
        self._lines = [Strip(line, width) for line in lines]
        self.virtual_size = Size(width, len(self._lines))

    def on_resize(self) -> None:
        """Lay the content out again for the new width."""
        self._layout()

    def render_line(self, y: int) -> Strip:
        """One visible line of the laid-out content."""
        index = int(self.scroll_offset.y) + y
        if index < len(self._lines):
            return self._lines[index]
        return Strip.blank(self.scrollable_content_region.width, self.rich_style)
