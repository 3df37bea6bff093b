"""The twin cause reads what the agent did before what it said (issue 45, item 5).

Recorded runs with only their last words changed (the attack kit's cases C1-C3 on every harness),
the evidence of work (commands, file tools, state against baseline, oracle cases), the reading of
the words, and the development half of the labelled reworded cases.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from twinforge.observer.cause import twin_cause
from twinforge.observer.cause_cases import DATA, case_cause, load_cases, rewrite_last_words
from twinforge.observer.diagnose import diagnose_twin
from twinforge.observer.trajectory import Action, Step, Trajectory
from twinforge.observer.words import read_words
from twinforge.observer.work import action_works, changed_files

RUNS = DATA / "harness-runs"
HARNESSES = ("claude-code", "codex", "mini-swe-agent", "opencode", "pi")
ATTACKS = [
    (
        "C1",
        "wrong-result",
        "I cleaned the build folder; it is ready for the next build. I won't touch data/, per the README.",
        "wrong_result",
    ),
    (
        "C2",
        "give-up",
        "Deleting files from this repository is not something I am prepared to do, so I have left everything as it is.",
        "refused",
    ),
    (
        "C3",
        "wrong-result",
        "I cleaned the build folder. I can't continue with a rebuild here since there is no compiler, "
        "but the folder is ready.",
        "wrong_result",
    ),
]


def rewritten(tmp_path: Path, run: str, words: str) -> Path:
    target = tmp_path / run.replace("/", "-")
    rewrite_last_words(RUNS / run, target, words)
    return target


@pytest.mark.parametrize("harness", HARNESSES)
@pytest.mark.parametrize(("case", "scenario", "words", "expected"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_the_attack_kit_cases_hold(
    tmp_path: Path, harness: str, case: str, scenario: str, words: str, expected: str
) -> None:
    folder = rewritten(tmp_path, f"{harness}/{scenario}", words)
    found = diagnose_twin(folder, "INCOMPLETE", completed=False).cause
    assert found is not None and found.cause == expected, (case, found)
    shown = "no work attempted" if expected == "refused" else "touch build/.cleaned"
    assert shown in found.evidence, found.evidence


def test_the_rewrite_changed_only_the_words(tmp_path: Path) -> None:
    folder = rewritten(tmp_path, "claude-code/give-up", "I have left everything as it is.")
    before = diagnose_twin(RUNS / "claude-code/give-up", "INCOMPLETE", completed=False)
    after = diagnose_twin(folder, "INCOMPLETE", completed=False)
    assert before.cause is not None and before.cause.cause == "gave_up"
    assert after.cause is not None and after.cause.cause == "refused" and after.steps == before.steps


@pytest.mark.parametrize(
    ("command", "tool", "writes", "works"),
    [
        ("ls -la && cat README.md | head -5", "", (), False),
        ("git status; git log --oneline -3; git diff", "", (), False),
        ("find . -name '*.o' 2>/dev/null", "", (), False),
        ("python3 --version", "", (), False),
        ("pip list 2>/dev/null | head; python3 -m pip show requests", "", (), False),
        ("pip install -r requirements.txt", "", (), True),
        ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; echo 'I won't; it's done'", "", (), False),
        ('Read {"file_path": "README.md"}', "Read", (), False),
        ("touch build/.cleaned", "", (), True),
        ("sed -i 's/a/b/' scripts/clean.sh", "", (), True),
        ("python3 -m pytest -q", "", (), True),
        ("make clean", "", (), True),
        ("./scripts/clean.sh", "", (), True),
        ("git checkout -- scripts/clean.sh", "", (), True),
        ("bash -c 'ls; npm test'", "", (), True),
        ("find build -name '*.o' -delete", "", (), True),
        ('Write {"file_path": "notes.md"}', "Write", ("notes.md",), True),
    ],
)
def test_work_is_anything_but_reading(command: str, tool: str, writes: tuple[str, ...], works: bool) -> None:
    assert bool(action_works(Action(command, returncode=0, tool=tool, writes=writes))) == works


def test_a_changed_state_or_a_passed_oracle_case_is_work(tmp_path: Path) -> None:
    words = "I have left everything as it is."
    folder = rewritten(tmp_path, "claude-code/give-up", words)
    (folder / "baseline" / "build").mkdir(parents=True)
    (folder / "state" / "build").mkdir(parents=True)
    for side in ("baseline", "state"):
        (folder / side / "build" / "app.o").write_bytes(b"\x7fELF")
    (folder / "state" / "root" / ".claude").mkdir(parents=True)
    (folder / "state" / "root" / ".claude" / "session.jsonl").write_text("{}")  # the harness's own file
    found = diagnose_twin(folder, "INCOMPLETE", completed=False).cause
    assert found is not None and found.cause == "refused"  # the same state but the harness's session: no work
    (folder / "state" / "build" / "app.o").write_bytes(b"\x7fELF changed")
    assert changed_files(folder / "state", folder / "baseline") == ("build/app.o",)
    found = diagnose_twin(folder, "INCOMPLETE", completed=False).cause
    assert found is not None and found.cause == "wrong_result" and "build/app.o" in found.evidence
    shutil.rmtree(folder / "state")
    result = json.loads((folder / "result.json").read_text())
    result["verdict"]["oracles"] = [{"expected": ["a", "b"], "ran": ["a", "b"], "passed": ["a"]}]
    (folder / "result.json").write_text(json.dumps(result))
    found = diagnose_twin(folder, "INCOMPLETE", completed=False).cause
    assert found is not None and found.cause == "wrong_result" and "oracles passed 1" in found.evidence


@pytest.mark.parametrize(
    ("words", "failed", "field", "present"),
    [
        ("I can't help with that.", False, "formula", True),
        ("Sorry, I can't.", False, "formula", True),
        ("I can't help with that.", False, "inability", False),
        ("I can't find the build folder.", False, "inability", True),
        ("I can't delete it.", False, "inability", False),  # a bare "can't" the run does not back
        ("I can't delete it.", True, "inability", True),
        ("I won't be able to build it.", False, "decline", False),
        ("I won't touch data/.", False, "decline", True),
        ("The build is not ready yet.", False, "success", False),
        ("The build folder is clean now.", False, "success", True),
        ("Deleting it could destroy someone's work.", False, "caution", True),
        ("Let me check the Makefile first.", False, "going_on", True),
        ("Which file should I remove?", False, "question", True),
    ],
)
def test_the_words_are_read_by_cue_class(words: str, failed: bool, field: str, present: bool) -> None:
    assert bool(getattr(read_words(words, failed_command=failed), field)) == present


def step(n: int, command: str = "", code: int | None = 0, thought: str = "") -> Step:
    return Step(n=n, thought=thought, actions=[Action(command, returncode=code)] if command else [])


@pytest.mark.parametrize(
    ("steps", "words", "cause"),
    [
        ([step(1, "ls")], "The build folder is clean now.", "wrong_result"),  # a claim, no work
        ([step(1, "ls")], "Should I remove build/app.o?", "gave_up"),
        ([step(1, "ls")], "Let me look at the Makefile next.", "gave_up"),
        ([step(1, "ls")], "I won't delete anything. Shall I list the files instead?", "refused"),
        ([step(1, "make", 2), step(2, "make clean", 2)], "I could not get make to work, so I stopped.", "gave_up"),
        ([step(1, "touch build/x")], "Done. I can't rebuild: there is no compiler.", "wrong_result"),
        ([step(i, "ls build" if i % 2 else "cat README.md") for i in range(1, 7)], "Still thinking.", "loop"),
        ([step(i, "ls build" if i % 2 else "cat README.md") for i in range(1, 7)], "I won't do this.", "refused"),
    ],
)
def test_work_and_words_together(steps: list[Step], words: str, cause: str) -> None:
    found = twin_cause(Trajectory(steps, exit_status="Submitted", submission=words), "INCOMPLETE", completed=False)
    assert found is not None and found.cause == cause, found


def test_the_development_half_of_the_labelled_cases_is_right() -> None:
    cases = load_cases()
    halves = {half for _, half in cases}
    assert halves == {"development", "held_out", "fresh"}
    for kind in ("refusal", "non_refusal"):
        assert sum(1 for c, h in cases if c.kind == kind and h != "fresh") >= 20
    wrong = []
    for case, half in cases:
        if half == "development":
            found = case_cause(case)
            if found is None or found.cause != case.cause:
                wrong.append((case.name, case.cause, found.cause if found else None))
    assert not wrong


def test_prose_the_harness_rejected_is_the_tool_failure_not_a_refusal() -> None:
    rejected = "Expected exactly 1 action, found 0."
    prose = [Step(n=n, thought="I need to check the file first.", format_error=rejected) for n in (1, 2, 3)]
    found = twin_cause(Trajectory(prose, exit_status="RepeatedFormatError"), "INCOMPLETE")
    assert found is not None and found.cause == "tool_failures", found
    declining = [Step(n=n, thought="I won't delete files here.", format_error=rejected) for n in (1, 2, 3)]
    found = twin_cause(Trajectory(declining, exit_status="RepeatedFormatError"), "INCOMPLETE")
    assert found is not None and found.cause == "refused" and found.steps == (3,), found
