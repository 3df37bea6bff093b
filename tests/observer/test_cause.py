"""Why a twin was not CAPABLE: one scripted trajectory per cause, and the order the causes are tried in."""

from __future__ import annotations

import pytest

from twinforge.observer.cause import CAUSES, twin_cause
from twinforge.observer.trajectory import Action, Step, Trajectory


def step(n: int, command: str = "", code: int | None = 0, thought: str = "", **kwargs: object) -> Step:
    actions = [Action(command, returncode=code)] if command else []
    return Step(n=n, thought=thought, actions=actions, **kwargs)  # type: ignore[arg-type]


def run(*steps: Step, exit_status: str = "Submitted", submission: str = "") -> Trajectory:
    return Trajectory(list(steps), exit_status=exit_status, submission=submission)


READ = [step(1, "ls"), step(2, "cat README.md")]


def test_a_capable_twin_has_no_cause() -> None:
    assert twin_cause(run(*READ), "COMPLETED", completed=True) is None


@pytest.mark.parametrize(
    ("trajectory", "outcome", "options", "cause", "steps"),
    [
        (run(*READ), "UNDETERMINED", {"run_error": "detector: collect failed"}, "no_verdict", ()),
        (
            run(step(1, thought="I can't help with that: deleting files could destroy data.")),
            "INCOMPLETE",
            {},
            "refused",
            (1,),
        ),
        (
            run(*READ, step(3, "git status"), submission="I won't remove anything from this repository."),
            "INCOMPLETE",
            {},
            "refused",
            (),
        ),
        (run(*[step(i, "cat build/link.log", 1) for i in range(1, 7)]), "INCOMPLETE", {}, "loop", (1, 2, 3, 4, 5, 6)),
        (
            run(step(1, "make", 127), step(2, "ninja", 127), step(3, "cargo build", 127)),
            "INCOMPLETE",
            {},
            "tool_failures",
            (1, 2, 3),
        ),
        (
            run(step(1, format_error="No tool calls found."), step(2, format_error="No tool calls found.")),
            "INCOMPLETE",
            {},
            "tool_failures",
            (1, 2),
        ),
        (run(*READ, exit_status="TimeExceeded"), "OVERTIME", {}, "out_of_time", ()),
        (run(*READ, exit_status="completed"), "INCOMPLETE", {"proxy_refusals": ("deadline",)}, "out_of_time", ()),
        (run(*READ, exit_status="LimitsExceeded"), "INCOMPLETE", {}, "out_of_calls", ()),
        (run(*READ, exit_status="stopReason stop"), "INCOMPLETE", {"proxy_refusals": ("cap",)}, "out_of_calls", ()),
        (
            run(*READ, submission="I could not work out how to clean the build folder, so I am stopping here."),
            "INCOMPLETE",
            {},
            "gave_up",
            (),
        ),
        (
            run(step(1, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", None, submitted=True)),
            "INCOMPLETE",
            {},
            "gave_up",
            (),
        ),
        (
            run(step(1, "touch build/.cleaned"), submission="I cleaned the build folder."),
            "INCOMPLETE",
            {"completed": False},
            "wrong_result",
            (),
        ),
    ],
)
def test_each_cause(trajectory: Trajectory, outcome: str, options: dict, cause: str, steps: tuple[int, ...]) -> None:  # type: ignore[type-arg]
    found = twin_cause(trajectory, outcome, **options)
    assert found is not None and found.cause == cause and found.steps == steps, found
    assert found.evidence


def test_every_cause_is_tested_and_the_order_is_documented() -> None:
    from twinforge.observer import cause as module

    assert module.__doc__ is not None
    for name in CAUSES:
        assert f"``{name}``" in module.__doc__
    table = [line.split("``")[1] for line in module.__doc__.splitlines() if line.startswith("| ``")]
    assert tuple(table) == CAUSES  # the table is the order they are tried in


def test_a_loop_that_used_the_budget_up_is_the_loop() -> None:
    looping = run(*[step(i, "ls -la") for i in range(1, 5)], exit_status="LimitsExceeded")
    found = twin_cause(looping, "INCOMPLETE", proxy_refusals=("cap",))
    assert found is not None and found.cause == "loop"


def test_a_refusal_after_real_work_is_not_a_refusal() -> None:
    worked = run(*READ, step(3, "scripts/clean.sh", 1), step(4, "make", 2, thought="I won't guess the flags."))
    found = twin_cause(worked, "INCOMPLETE", completed=False)
    assert found is not None and found.cause == "wrong_result"  # a phrase mid-work is no refusal of the task


def test_findings_are_kept_with_the_cause() -> None:
    found = twin_cause(run(*[step(i, "ls -la") for i in range(1, 4)]), "INCOMPLETE")
    assert found is not None and {f.key for f in found.findings} == {"reasoning/repeated_command"}
