"""A file that is not valid YAML: the error's line and column, and every entry that parses on its own checked.

docs/stage1.md, "Hand-written blueprints": a broken entry is a defect of that entry alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support.cli import run
from tests.support.samples import blueprint_dict
from twinforge.blueprints.pieces import read_pieces
from twinforge.core.inputfiles import parse_yaml


def _listed(*entries: dict[str, str], broken_at: int) -> str:
    """A YAML list of ``entries`` whose item ``broken_at`` has an unclosed flow sequence."""
    parts = []
    for index, entry in enumerate(entries):
        text = yaml.safe_dump([entry], sort_keys=False, width=1000)
        if index == broken_at:
            text = text.replace("trap: ", "trap: [unclosed ", 1)
        parts.append(text)
    return "".join(parts)


def test_a_list_with_one_broken_item_is_read_item_by_item_with_the_error_s_line_in_the_file() -> None:
    text = _listed(blueprint_dict(), blueprint_dict(), blueprint_dict(), broken_at=1)
    pieces = read_pieces(text)
    assert [p.problem is None for p in pieces] == [True, False, True]
    assert [p.line for p in pieces] == [1, 9, 17]  # eight lines per entry
    with pytest.raises(ValueError, match="line 11, column 13") as whole:
        parse_yaml(text)  # where the whole file fails ...
    assert pieces[1].problem == str(whole.value)  # ... the broken entry alone fails, counted in the file
    assert [p.value[0]["taxonomy_id"] for p in (pieces[0], pieces[2])] == ["S2-R3", "S2-R3"]


def test_documents_and_an_items_list_are_split_too() -> None:
    first = yaml.safe_dump(blueprint_dict(), sort_keys=False, width=1000)  # 8 lines
    second = yaml.safe_dump([blueprint_dict()], sort_keys=False, width=1000)  # 8 lines
    indented = "".join(f"  {line}\n" for line in second.splitlines())
    text = first + "---\nitems:\n" + indented + "  - engineering_task: 'unterminated\n"
    pieces = read_pieces(text)
    assert [p.problem is None for p in pieces] == [True, True, False]
    assert [p.line for p in pieces] == [1, 11, 19]
    assert "line 20, column 1" in (pieces[2].problem or "")  # the end of the file, where the quote is still open
    (whole,) = read_pieces("engineering_task: [unclosed\n")
    assert "line 2, column 1" in (whole.problem or "")


def test_check_reports_the_line_and_which_entries_were_and_were_not_checked(tmp_path: Path) -> None:
    path = tmp_path / "three.yaml"
    path.write_text(_listed(blueprint_dict(), blueprint_dict(), blueprint_dict(harm_path="x"), broken_at=1))
    result = run("blueprint", "check", str(path), "--json", cwd=tmp_path)
    assert result.returncode == 1
    results = json.loads(result.stdout)
    assert [r["entry"] for r in results] == [0, 1, 2]
    assert [sorted({d["rule"] for d in r["defects"]}) for r in results] == [[], ["unparseable"], ["field-missing"]]
    message = results[1]["defects"][0]["message"]
    assert "line 11, column 13" in message and "entry 1 (from line 9) is not checked" in message
    assert "entries 0, 2 of the file are checked on their own" in message
    lone = tmp_path / "lone.yaml"
    lone.write_text("engineering_task: [unclosed\n")
    (only,) = json.loads(run("blueprint", "check", str(lone), "--json", cwd=tmp_path).stdout)
    assert (
        "line 2, column 1" in only["defects"][0]["message"] and "no entry is checked" in only["defects"][0]["message"]
    )
