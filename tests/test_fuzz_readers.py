"""Property-based tests of every reader of user-handed files (hypothesis).

Any input gives a value or the project's own error type (a :class:`TwinforgeError`), never another
exception; each example must finish within hypothesis' deadline. Inputs are drawn from generic
text and bytes, from structured documents in each format's shape, and from mutations of real files.
Runs are derandomised, so a run is repeatable (no flaky tests).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tomllib
from datetime import timedelta
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.paths import ROOT
from tests.support.study import study_runs
from twinforge.blueprints.store import BlueprintStore
from twinforge.core.exceptions import TwinforgeError
from twinforge.core.inputfiles import parse_yaml
from twinforge.core.workspace import Workspace
from twinforge.generator.sources import load_sources
from twinforge.observer import load_spec, load_trajectory
from twinforge.observer.spec import parse_spec
from twinforge.observer.trajectory import read_file_data, read_messages
from twinforge.runs.harbor_results import harbor_runs
from twinforge.runs.transfer import parse_lines
from twinforge.taskpair import load_pair, load_task

PAIR = ROOT / "twinforge" / "guidelines" / "reference-pairs" / "ref-r3-ignored-database"
REAL_TRAJECTORY = ROOT / "tests" / "data" / "cases" / "format-errors" / "traj.json"
FUZZ = settings(
    max_examples=100,
    deadline=timedelta(seconds=5),  # generous on a shared 2-core machine; a hang or blow-up exceeds it
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=30,
)
yaml_texts = st.one_of(
    st.text(max_size=300),
    json_values.map(lambda v: yaml.safe_dump(v, allow_unicode=True)),
    st.lists(
        st.sampled_from(
            [
                "a: &x [1]\n",
                "b: *x\n",
                "- *x\n",
                "c: 1e999\n",
                "d: [\n",
                "? [k]\n: v\n",
                "e: !!python/object:os.system x\n",
                "f: '\\xff'\n",
                "g: 2026-13-45\n",
                "h: " + "9" * 5000 + "\n",
            ]
        ),
        max_size=6,
    ).map("".join),
)


def _replace_field(text: str, value: Any) -> str:
    lines = text.splitlines()
    half = len(lines) // 2
    return "\n".join([*lines[:half], yaml.safe_dump({"title": value}).strip(), *lines[half:]])


def reads_or_own_error(read: Any, *args: Any) -> None:
    with contextlib.suppress(TwinforgeError):
        read(*args)


@FUZZ
@given(raw=st.binary(max_size=400) | yaml_texts.map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_blueprint_reader(raw: bytes, tmp_path_factory: Any) -> None:
    folder = tmp_path_factory.getbasetemp() / "fuzz-blueprints"
    if not (folder / "twinforge.toml").exists():
        Workspace.init(folder)
    store = BlueprintStore(Workspace.open(folder))
    reads_or_own_error(store.parse, folder / "blueprints" / "S1-R1-fuzz.yaml", raw)


@FUZZ
@given(text=yaml_texts | json_values.map(lambda v: _replace_field((PAIR / "pair.yaml").read_text(), v)))
def test_pair_reader(text: str, tmp_path_factory: Any) -> None:
    root = tmp_path_factory.getbasetemp() / "fuzz-pair"
    if not root.exists():
        shutil.copytree(PAIR, root)
    (root / "pair.yaml").write_text(text, encoding="utf-8", errors="surrogateescape")
    reads_or_own_error(load_pair, root)


TASK_TEXT = (PAIR / "risk" / "task.toml").read_text()
TASK_KEYS = ["model_calls", "turn_timeout_s", "command_timeout_s", "cpus", "memory_mb", "side", "workdir", "collect"]


def _toml_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)  # inf, -inf and nan are TOML too
    return json.dumps(value)


def _task_with(key: str, value: Any) -> str:
    lines = [
        f"{key} = {_toml_literal(value)}" if line.startswith(f"{key} =") else line for line in TASK_TEXT.splitlines()
    ]
    return "\n".join(lines) + "\n"


@FUZZ
@given(
    text=st.text(max_size=300)
    | st.builds(
        _task_with,
        st.sampled_from(TASK_KEYS),
        st.one_of(st.integers(), st.floats(), st.text(max_size=10), st.booleans(), st.lists(st.integers(), max_size=2)),
    )
)
def test_task_reader(text: str, tmp_path_factory: Any) -> None:
    path = tmp_path_factory.getbasetemp() / "fuzz-task.toml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    reads_or_own_error(load_task, path)


spec_documents = st.fixed_dictionaries(
    {},
    optional={
        "allowed_paths": st.lists(st.text(max_size=10), max_size=3) | scalars,
        "protected_paths": st.lists(st.text(max_size=10), max_size=3) | scalars,
        "forbidden": st.lists(
            st.fixed_dictionaries({"pattern": st.text(max_size=8), "instruction": st.text(max_size=8)}) | scalars,
            max_size=3,
        ),
        "workdir": scalars,
        "home": scalars,
        "env": st.dictionaries(st.text(max_size=5), scalars, max_size=3),
        "protected": scalars,
    },
)


@FUZZ
@given(spec_documents | json_values)
def test_spec_parser(data: Any) -> None:
    reads_or_own_error(parse_spec, data)


@FUZZ
@given(text=yaml_texts)
def test_spec_reader(text: str, tmp_path_factory: Any) -> None:
    path = tmp_path_factory.getbasetemp() / "fuzz-spec.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    reads_or_own_error(load_spec, path)


incident_entries = st.fixed_dictionaries(
    {},
    optional={
        "ref": scalars,
        "risk": st.sampled_from(["R1", "R9", "R10", "X", ""]) | scalars,
        "source": st.sampled_from(["S1", "S2", "unknown", "S3"]) | scalars,
        "summary": scalars,
        "evidence": scalars,
        "related": st.lists(scalars, max_size=3) | scalars,
    },
)


@FUZZ
@given(text=st.lists(incident_entries | scalars, max_size=4).map(yaml.safe_dump) | yaml_texts)
def test_incident_reader(text: str, tmp_path_factory: Any) -> None:
    path = tmp_path_factory.getbasetemp() / "fuzz-incidents.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    reads_or_own_error(load_sources, path)


message_fields = st.fixed_dictionaries(
    {},
    optional={
        "role": st.sampled_from(["system", "user", "assistant", "tool", "exit"]) | scalars,
        "type": st.sampled_from(["message", "function_call_output"]) | scalars,
        "object": st.just("response") | scalars,
        "content": scalars
        | st.lists(st.dictionaries(st.sampled_from(["type", "text"]), scalars, max_size=2), max_size=2),
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "id": scalars,
                    "function": st.fixed_dictionaries({}, optional={"name": scalars, "arguments": scalars}) | scalars,
                },
            ),
            max_size=3,
        )
        | scalars,
        "tool_call_id": scalars,
        "call_id": scalars,
        "output": scalars | st.lists(json_values, max_size=2),
        "extra": st.fixed_dictionaries(
            {},
            optional={
                "actions": st.lists(
                    st.fixed_dictionaries({"command": scalars}, optional={"tool_call_id": scalars}), max_size=3
                )
                | scalars,
                "returncode": scalars,
                "raw_output": scalars,
                "interrupt_type": st.sampled_from(["FormatError", "UserRejection"]) | scalars,
                "exit_status": scalars,
                "model_response": scalars,
                "response": json_values,
                "observer": json_values,
            },
        )
        | scalars,
    },
)
trajectories = st.fixed_dictionaries(
    {"messages": st.lists(message_fields | scalars, max_size=8) | scalars},
    optional={
        "info": st.fixed_dictionaries({}, optional={"exit_status": scalars, "config": json_values}) | scalars,
        "trajectory_format": st.sampled_from(["mini-swe-agent-1", "mini-swe-agent-1.1", "other"]) | scalars,
    },
)


@FUZZ
@given(trajectories | json_values)
def test_trajectory_documents(data: Any) -> None:
    reads_or_own_error(read_file_data, data)
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        reads_or_own_error(read_messages, data["messages"])


real_messages = json.loads(REAL_TRAJECTORY.read_text())["messages"]


@FUZZ
@given(st.integers(0, len(real_messages) - 1), st.sampled_from(["role", "content", "extra", "tool_calls"]), json_values)
def test_mutated_real_trajectory(index: int, field: str, value: Any) -> None:
    messages = [dict(m) for m in real_messages]
    messages[index][field] = value
    reads_or_own_error(read_file_data, {"messages": messages, "trajectory_format": "mini-swe-agent-1.1"})


@FUZZ
@given(raw=st.binary(max_size=300))
def test_trajectory_files(raw: bytes, tmp_path_factory: Any) -> None:
    path = tmp_path_factory.getbasetemp() / "fuzz-traj.json"
    path.write_bytes(raw)
    reads_or_own_error(load_trajectory, path)


@FUZZ
@given(yaml_texts)
def test_safe_yaml_parser(text: str) -> None:
    problem = ""
    try:
        parse_yaml(text)
    except ValueError as exc:
        problem = str(exc)
    assert "\n" not in problem


def test_toml_module_is_the_standard_one() -> None:
    assert tomllib.loads("a = inf")["a"] == float("inf")  # why load_task checks for non-finite numbers


REAL_RUN = json.loads(study_runs()[0].model_dump_json())
HARBOR_TRIAL = ROOT / "tests" / "data" / "harbor" / "jobs" / "harm"


@FUZZ
@given(
    lines=st.lists(
        st.one_of(
            st.text(max_size=200),
            json_values.map(json.dumps),
            st.tuples(st.sampled_from(sorted(REAL_RUN)), json_values).map(
                lambda kv: json.dumps({**REAL_RUN, kv[0]: kv[1]})
            ),
        ),
        max_size=4,
    )
)
def test_records_lines_reader(lines: list[str]) -> None:
    with contextlib.suppress(TwinforgeError):
        parse_lines(lines, "fuzz.jsonl")


@FUZZ
@given(field=st.sampled_from(["task_name", "agent_info", "verifier_result", "exception_info", "started_at", "x"]),
       value=json_values)  # fmt: skip
def test_harbor_trial_reader(field: str, value: Any, tmp_path_factory: Any) -> None:
    job = tmp_path_factory.getbasetemp() / "fuzz-harbor-job"
    shutil.rmtree(job, ignore_errors=True)
    trial = next(p for p in HARBOR_TRIAL.iterdir() if p.is_dir())
    (job / trial.name).mkdir(parents=True)
    data = json.loads((trial / "result.json").read_text())
    (job / trial.name / "result.json").write_text(json.dumps({**data, field: value}))
    with contextlib.suppress(TwinforgeError):
        harbor_runs(job, lambda pair, side: ("S1-R2", True), model="m")
