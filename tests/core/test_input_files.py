"""Pair, task and blueprint files that are wrong fail with one clear line, fast (docs/stage1.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REFERENCE
from twinforge.blueprints.exceptions import BlueprintFileError
from twinforge.blueprints.store import BlueprintStore
from twinforge.blueprints.summary import summarize
from twinforge.core.inputfiles import InputFileError, load_yaml, non_finite, parse_yaml
from twinforge.core.workspace import Workspace
from twinforge.taskpair import PairFormatError, load_pair, load_task

# The "billion laughs": nine levels of nine aliases, 9**9 strings once expanded.
LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.fixture
def pair(tmp_path: Path) -> Path:
    target = tmp_path / "ref-r3-ignored-database"
    shutil.copytree(REFERENCE / "ref-r3-ignored-database", target)
    return target


def problem(pair: Path) -> str:
    with pytest.raises(PairFormatError) as caught:
        load_pair(pair)
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400, message
    return message


def test_pair_yaml_not_utf8(pair: Path) -> None:
    (pair / "pair.yaml").write_bytes((pair / "pair.yaml").read_bytes().replace(b"title:", b"title: \xff\xfe"))
    assert "pair.yaml: not UTF-8 text" in problem(pair)


def test_task_toml_not_utf8(pair: Path) -> None:
    (pair / "twin" / "task.toml").write_bytes(b'side = "tw\xe9n"\n')
    assert "twin/task.toml: not UTF-8 text" in problem(pair)


def test_directory_where_a_file_belongs(pair: Path) -> None:
    (pair / "risk" / "task.toml").unlink()
    (pair / "risk" / "task.toml").mkdir()
    assert "risk/task.toml: is a directory, not a file" in problem(pair)
    (pair / "pair.yaml").unlink()
    (pair / "pair.yaml").mkdir()
    assert "pair.yaml: is a directory, not a file" in problem(pair)


def test_fifo_is_refused_without_blocking(pair: Path) -> None:
    (pair / "pair.yaml").unlink()
    os.mkfifo(pair / "pair.yaml")  # reading it would wait for a writer forever
    assert "pair.yaml: is not a regular file" in problem(pair)


def test_yaml_aliases_are_refused(pair: Path) -> None:
    (pair / "pair.yaml").write_text(LAUGHS)
    message = problem(pair)
    assert "pair.yaml: not valid YAML: line 2" in message and "aliases (*a) are not allowed" in message
    assert "lol" not in message  # the input is never echoed


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("turn_timeout_s = inf", "agent.turn_timeout_s: must be a finite number"),
        ("turn_timeout_s = nan", "agent.turn_timeout_s: must be a finite number"),
        ("turn_timeout_s = -inf", "agent.turn_timeout_s: must be a finite number"),
        ("turn_timeout_s = 0", "agent.turn_timeout_s: Input should be greater than 0"),
        ("turn_timeout_s = -5", "agent.turn_timeout_s: Input should be greater than 0"),
        ("model_calls = 0", "agent.model_calls: Input should be greater than or equal to 1"),
        ("command_timeout_s = inf", "agent.command_timeout_s: must be a finite number"),
    ],
)
def test_budgets_must_be_finite_and_positive(pair: Path, line: str, expected: str) -> None:
    toml = pair / "risk" / "task.toml"
    key = line.split(" = ")[0]
    text = "\n".join(line if row.startswith(f"{key} =") else row for row in toml.read_text().splitlines())
    toml.write_text(text + "\n")
    with pytest.raises(PairFormatError) as caught:
        load_task(toml)
    assert f"risk/task.toml: {expected}" in str(caught.value)


def test_non_finite_paths() -> None:
    assert non_finite({"a": {"b": float("inf")}, "c": [1.0, float("nan")], "d": 2}) == ["a.b", "c.1"]


def test_parse_yaml_problems_are_one_line() -> None:
    for text, expected in [
        ("a: [1, 2", "line 2, column 1"),
        ("x: &x 1\ny: *x\n", "aliases (*x) are not allowed"),
        ("[" * 3000 + "]" * 3000, "not valid YAML"),
        ("n: " + "9" * 5000, "a value cannot be read"),
        ("? [a]\n: b\n", "not valid YAML"),
    ]:
        with pytest.raises(ValueError, match="not valid YAML") as caught:
            parse_yaml(text)
        assert expected in str(caught.value) and "\n" not in str(caught.value)
    assert parse_yaml("glob: 'tests/**'\nstar: a * b\n") == {"glob": "tests/**", "star": "a * b"}


def test_oversized_file_is_not_read(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("a: b\n" * 10)
    with pytest.raises(InputFileError, match="larger than the 20-byte limit"):
        load_yaml(big, max_bytes=20)


# --- blueprint files: status and queue ----------------------------------------------------------


def test_blueprint_files_fail_cleanly(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws")
    store = BlueprintStore(ws)
    folder = ws.blueprints_dir
    (folder / "S1-R1-aliases.yaml").write_text(LAUGHS)
    (folder / "S1-R1-latin1.yaml").write_bytes(b"id: S1-R1-latin1\ntitle: caf\xe9\n")
    (folder / "S1-R1-dir.yaml").mkdir()
    problems = {}
    for name in ("S1-R1-aliases", "S1-R1-latin1", "S1-R1-dir"):
        with pytest.raises(BlueprintFileError) as caught:
            store.load(name)
        problems[name] = str(caught.value)
    assert "aliases (*a) are not allowed" in problems["S1-R1-aliases"]
    assert "not UTF-8 text" in problems["S1-R1-latin1"]
    assert "is a directory, not a file" in problems["S1-R1-dir"]
    assert all("\n" not in p and "lol" not in p for p in problems.values())
    summary = summarize(store)
    assert sorted(summary.invalid_files) == [f"blueprints/S1-R1-{n}.yaml" for n in ("aliases", "dir", "latin1")]
    entries = {e.name: e for e in store.listing()}  # what the queue shows
    assert "aliases (*a) are not allowed" in (entries["S1-R1-aliases.yaml"].error or "")
    store.close()


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "twinforge", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=120,
    )


def test_commands_report_bad_files_in_one_line(tmp_path: Path, pair: Path) -> None:
    (pair / "pair.yaml").write_text(LAUGHS)
    out = run("validate", "--static-only", "--json", str(pair), cwd=tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    (report,) = json.loads(out.stdout)
    (check,) = report["checks"]
    assert check["name"] == "format" and "aliases (*a) are not allowed" in check["detail"]
    ws = Workspace.init(tmp_path / "ws")
    (ws.blueprints_dir / "S1-R1-bad.yaml").write_text(LAUGHS)
    status = run("status", cwd=ws.root)
    assert status.returncode == 0 and "Traceback" not in status.stderr
    assert "blueprints/S1-R1-bad.yaml: not valid YAML" in status.stdout and "aliases" in status.stdout
