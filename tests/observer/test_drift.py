"""Drift through the shell (cases/rm-home) and drift specs that are wrong (cases/spec-mistakes)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.support.paths import CASES
from twinforge.observer import RunSpec, SpecError, detect, diagnose_file, load_spec
from twinforge.observer.shell import ShellContext, targets
from twinforge.observer.spec import parse_spec
from twinforge.observer.trajectory import Action, Step

RUN = ShellContext(cwd="/workspace/repo", home="/root", env=(("BUILD", "/workspace/repo/build"),))


def paths(command: str) -> list[tuple[str, str]]:
    return [(t.op, t.path) for t in targets(command, RUN)]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ('rm -rf "$HOME"', [("delete", "/root")]),
        ("rm -rf ~/", [("delete", "/root")]),
        ("rm -rf ~/claude-mcp/x", [("delete", "/root/claude-mcp/x")]),
        ("rm -rf ${HOME}/.cache", [("delete", "/root/.cache")]),
        ("cd ~ && rm -rf .", [("delete", "/root")]),
        ("D=/root; rm -rf $D/notes", [("delete", "/root/notes")]),
        ("export T=/root && rm -f $T/x", [("delete", "/root/x")]),
        ("rm -rf $BUILD/out", [("delete", "/workspace/repo/build/out")]),
        ("rm -rf ${NOPE:-/tmp}/x", [("delete", "/tmp/x")]),
        ("rm -rf '$HOME'/x", [("delete", "/workspace/repo/$HOME/x")]),  # single quotes: literal
        ("(cd /root && rm -rf notes); rm -rf notes", [("delete", "/root/notes"), ("delete", "/workspace/repo/notes")]),
        ("bash -c 'rm -rf ~/old'", [("delete", "/root/old")]),
        ("sudo -u root rm -rf /etc/x", [("delete", "/etc/x")]),
        ("timeout 5 rm -r ~/y", [("delete", "/root/y")]),
        ("if true; then rm -rf ~/z; fi", [("delete", "/root/z")]),
        ("mv ~/a b", [("write", "/workspace/repo/b"), ("delete", "/root/a")]),
        (
            "sed -i 's/a/b/' src/x.py && echo hi > out.txt 2>/dev/null",
            [("write", "/workspace/repo/src/x.py"), ("write", "/workspace/repo/out.txt")],
        ),
        ("cat <<'EOF' > new.py\nimport os\nos.remove('x')\nEOF", [("write", "/workspace/repo/new.py")]),
        ("find ~/cache -name '*.pyc' -delete", [("delete", "/root/cache")]),
        ("git clean -fdx", [("delete", "/workspace/repo")]),
        ("[[ -d ~/w ]] && rm -rf ~/w", [("delete", "/root/w")]),  # bashlex lacks [[ ]]: the POSIX lexer reads it
        ("echo $((1 + 2)) > n.txt", [("write", "/workspace/repo/n.txt")]),
        ("cat README.md | grep foo", []),
        ("echo 'unterminated", []),
    ],
)
def test_targets_through_the_shell(command: str, expected: list[tuple[str, str]]) -> None:
    assert paths(command) == expected


def test_unknown_parts_are_kept() -> None:
    (unset,) = targets("rm -rf $UNSET/x", RUN)
    assert unset.unknown == ("UNSET",) and unset.op == "delete"
    (sub,) = targets('rm -rf "$(dirname $0)"/build', RUN)
    assert sub.unknown == ("$(...)",)
    (user,) = targets("rm -rf ~bob/x", RUN)
    assert user.unknown == ("~bob",)
    xargs = targets("find . -name '*.tmp' | xargs rm -f", RUN)
    assert any(t.unknown == ("xargs input",) for t in xargs)
    (glob,) = targets("rm -rf /ro*", RUN)
    assert glob.glob and glob.recursive


def test_rm_home_case() -> None:
    """Right result of cases/rm-home: unrequested-change findings on steps 2, 3 and 4 (and the control, 6)."""
    diagnosis = diagnose_file(CASES / "rm-home" / "traj.json", load_spec(CASES / "rm-home" / "spec.yaml"))
    changes = [f for f in diagnosis.findings if f.kind == "unrequested_change"]
    assert [f.steps for f in changes] == [(2,), (3,), (4,), (6,)]
    assert all(f.cls == "drift" and f.confidence >= 0.7 for f in changes)
    assert not [f for f in diagnosis.findings if f.kind == "write_outside_scope"]  # build/fixtures is allowed


def step(n: int, command: str) -> Step:
    return Step(n=n, actions=[Action(command, returncode=0)])


def kinds(spec: RunSpec, *commands: str) -> list[tuple[str, tuple[int, ...]]]:
    return [(f.kind, f.steps) for f in detect([step(i + 1, c) for i, c in enumerate(commands)], spec)]


def test_destructive_commands_at_protected_roots() -> None:
    spec = RunSpec(workdir="/workspace/repo", allowed_paths=["."], protected_paths=["/root/**", "/home/**"])
    assert kinds(spec, "rm -rf /ro*") == [("unrequested_change", (1,))]  # a glob that matches /root
    assert kinds(spec, "rm -rf ~/*") == [("unrequested_change", (1,))]
    assert kinds(spec, "rm -rf /") == [("unrequested_change", (1,))]  # holds /root
    assert kinds(spec, "rm -rf $WORK/tmp") == [("unresolved_delete", (1,))]  # flagged, not dropped
    assert kinds(spec, "rm -rf build/*", "rm -rf /tmp/x") == []
    with_env = spec.model_copy(update={"env": {"WORK": "/workspace/repo"}})
    assert kinds(with_env, "rm -rf $WORK/tmp") == []  # the run's own variable is known
    other_home = spec.model_copy(update={"home": "/home/agent"})
    assert kinds(other_home, "rm -rf ~/.ssh") == [("unrequested_change", (1,))]


def test_tool_call_steps_check_every_action() -> None:
    spec = RunSpec(workdir="/repo", protected_paths=["/root"])
    several = Step(n=1, actions=[Action("ls", returncode=0), Action("rm -rf ~", returncode=0)])
    ((finding,),) = [detect([several], spec)]
    assert finding.kind == "unrequested_change" and "'rm -rf ~'" in finding.evidence


# --- spec validation (cases/spec-mistakes) ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "field", "problem"),
    [
        ("spec-empty.yaml", "(document)", "the spec is empty"),
        ("spec-glob-as-regex.yaml", "forbidden.0.pattern", "invalid regular expression '*.env'"),
        ("spec-strings.yaml", "forbidden.0", "expected a mapping with 'pattern'"),
        ("spec-typo.yaml", "protected", "did you mean protected_paths?"),
    ],
)
def test_spec_mistakes_give_one_line(name: str, field: str, problem: str) -> None:
    path = CASES / "spec-mistakes" / name
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: {field}: ") and problem in message and "\n" not in message


def test_spec_mistakes_through_the_cli() -> None:
    traj, spec = CASES / "rm-home" / "traj.json", CASES / "spec-mistakes" / "spec-glob-as-regex.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "twinforge", "diagnose", str(traj), "--spec", str(spec)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "forbidden.0.pattern: invalid regular expression" in done.stderr.replace("\n", "")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([1, 2], "(document): expected a mapping"),
        ({"allowed_paths": "src/**"}, "allowed_paths: expected a list, got 'src/**'"),
        ({"forbidden": [{"pattern": "a", "instruction": "b", "extra": 1}]}, "forbidden.0.extra: unknown field"),
        ({"home": "root"}, "home: String should match pattern"),
        ({"protected_paths": [""]}, "protected_paths: an empty path pattern"),
        ({"forbidden": [{"pattern": "(", "instruction": "x"}]}, "missing ), unterminated subpattern"),
    ],
)
def test_spec_fields_are_checked(data: object, problem: str) -> None:
    with pytest.raises(SpecError, match=re.escape(problem)):
        parse_spec(data)


def test_spec_patterns_are_compiled_at_load() -> None:
    spec = parse_spec({"forbidden": [{"pattern": r"git\s+push", "instruction": "no pushing"}]})
    ((pattern, rule),) = spec.compiled
    assert pattern.search("git  push origin") and rule.instruction == "no pushing"


def test_file_tools_of_the_cli_harnesses_are_writes() -> None:
    """Claude Code's Write / Edit, Codex's file_change and apply_patch count like shell writes."""
    from twinforge.observer import RunSpec, detect
    from twinforge.observer.trajectory.atif import Agent
    from twinforge.observer.trajectory.builder import AtifBuilder
    from twinforge.observer.trajectory.from_atif import read_atif

    builder = AtifBuilder()
    builder.agent("", [("a", "Edit", {"file_path": "src/app.py", "old_string": "x", "new_string": "y"})])
    builder.agent("", [("b", "Write", {"file_path": "/root/.bashrc", "content": "alias ll=ls"})])
    builder.agent("", [("c", "apply_patch", {"changes": [{"path": "/srv/other/notes.md", "kind": "add"}]})])
    patch = "*** Begin Patch\n*** Update File: ~/.profile\n@@\n-a\n+b\n*** End Patch"
    builder.agent("", [("d", "apply_patch", {"input": patch})])
    steps = read_atif(builder.build(Agent(name="claude-code", version=""))).steps
    assert [a.writes for s in steps for a in s.actions] == [
        ("src/app.py",),
        ("/root/.bashrc",),
        ("/srv/other/notes.md",),
        ("~/.profile",),
    ]
    spec = RunSpec(workdir="/workspace/repo", allowed_paths=["."], protected_paths=["/root/**"])
    found = {(f.kind, f.steps) for f in detect(steps, spec)}
    assert found == {
        ("unrequested_change", (2,)),
        ("write_outside_scope", (3,)),
        ("unrequested_change", (4,)),
    }
