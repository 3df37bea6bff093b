from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from twinforge.core.paths import guidelines_dir
from twinforge.core.workspace import Workspace
from twinforge.exporter import ExportError, export_harbor, resolve_pairs
from twinforge.exporter.harbor_dataset import content_digest
from twinforge.taskpair.runtime.engine import base_image_tag

REFS = guidelines_dir() / "reference-pairs"
NO_SERVICES = REFS / "ref-r2-env-example"
WITH_SERVICE = REFS / "ref-r5-typosquat"


def _toml(path: Path) -> dict:
    return tomllib.loads(path.read_text())


@pytest.fixture
def exported(tmp_path: Path) -> Path:
    out = tmp_path / "harbor"
    export_harbor(out, [NO_SERVICES, WITH_SERVICE])
    return out


def test_each_side_becomes_a_harbor_task(exported: Path) -> None:
    tasks = sorted(p.name for p in exported.iterdir() if (p / "task.toml").is_file())
    assert tasks == [
        "ref-r2-env-example-risk",
        "ref-r2-env-example-twin",
        "ref-r5-typosquat-risk",
        "ref-r5-typosquat-twin",
    ]
    for name in tasks:
        task = exported / name
        for rel in ("instruction.md", "README.md", "environment/Dockerfile", "environment/docker-compose.yaml"):
            assert (task / rel).is_file(), rel
        for rel in ("tests/Dockerfile", "tests/docker-compose.yaml", "tests/twinforge-verifier/verifier.py"):
            assert (task / rel).is_file(), rel
        assert os.access(task / "tests/test.sh", os.X_OK) and os.access(task / "solution/solve.sh", os.X_OK)
        own = task / "tests/twinforge-verifier"
        assert (own / "twinforge_detectors/check.py").is_file() and (own / "detector/detect.py").is_file()
        compile((own / "verifier.py").read_text(), "verifier.py", "exec")  # the rendered program is Python
    risk = exported / "ref-r2-env-example-risk"
    assert (risk / "instruction.md").read_text() == (NO_SERVICES / "risk/instruction.md").read_text()
    assert (risk / "solution/solve.sh").read_bytes() == (NO_SERVICES / "risk/solution/safe.sh").read_bytes()
    assert (risk / "solution/harm.sh").is_file()  # the other oracle stays beside it
    twin = exported / "ref-r2-env-example-twin"
    assert (twin / "solution/solve.sh").read_bytes() == (NO_SERVICES / "twin/solution/solve.sh").read_bytes()
    assert f"ARG BASE={base_image_tag()}" in (risk / "environment/Dockerfile").read_text()
    verifier = (risk / "tests/Dockerfile").read_text()
    assert verifier.startswith((risk / "environment/Dockerfile").read_text().rstrip("\n"))  # the task's own image
    assert "RUN rm -rf /workspace/repo" in verifier and "COPY twinforge-verifier/detector/ /detector/" in verifier


def test_task_toml_follows_harbors_schema_with_our_budgets(exported: Path) -> None:
    config = _toml(exported / "ref-r5-typosquat-risk/task.toml")
    assert config["schema_version"] == "1.4"
    assert config["task"]["name"] == "twinforge/ref-r5-typosquat-risk"
    assert config["verifier"]["environment_mode"] == "separate"
    assert config["agent"]["timeout_sec"] == 900
    assert config["environment"]["workdir"] == "/workspace/repo"
    assert config["metadata"]["twinforge"]["model_calls"] == 40
    sources = {(a["source"], a.get("service")) for a in config["artifacts"]}
    assert ("/workspace/repo", None) in sources
    assert ("/var/log/twinforge/pypi", "pypi") in sources
    assert ("/twinforge/baseline", "twinforge-baseline") in sources


def test_compose_puts_services_on_an_internal_network_and_main_under_init(exported: Path) -> None:
    with_service = yaml.safe_load((exported / "ref-r5-typosquat-risk/environment/docker-compose.yaml").read_text())
    main = with_service["services"]["main"]
    assert main["init"] is True and main["cap_drop"] == ["ALL"] and main["networks"] == ["twinforge"]
    assert with_service["networks"] == {"twinforge": {"internal": True}}
    index = with_service["services"]["pypi"]
    assert index["networks"] == {"twinforge": {"aliases": ["pypi"]}} and "healthcheck" in index
    dockerfile = exported / "ref-r5-typosquat-risk/environment" / index["build"]["dockerfile"]
    text = dockerfile.read_text()
    assert "COPY services/pypi/ /data/" in text
    assert 'CMD ["python3", "/opt/twinforge/services/index.py", "80"]' in text  # exec form: JSON
    command = with_service["services"]["twinforge-baseline"]["command"][-1]
    assert '"$$p"' in command and '"$p"' not in command  # compose would interpolate a bare $p
    baseline = with_service["services"]["twinforge-baseline"]
    assert baseline["network_mode"] == "none" and baseline["image"] == "${MAIN_IMAGE_NAME}"
    alone = yaml.safe_load((exported / "ref-r2-env-example-twin/environment/docker-compose.yaml").read_text())
    assert alone["services"]["main"]["network_mode"] == "none" and "networks" not in alone
    verifier = yaml.safe_load((exported / "ref-r2-env-example-twin/tests/docker-compose.yaml").read_text())
    assert verifier == {"services": {"main": {"init": True, "network_mode": "none"}}}


def test_manifest_carries_digests_blueprint_cell_and_evidence(exported: Path) -> None:
    manifest = _toml(exported / "dataset.toml")
    assert manifest["dataset"]["name"] == "twinforge/benchmark"
    digests = {t["name"]: t["digest"] for t in manifest["tasks"]}
    assert digests["twinforge/ref-r2-env-example-risk"] == content_digest(exported / "ref-r2-env-example-risk")
    meta = manifest["metadata"]["tasks"]["twinforge/ref-r5-typosquat-twin"]
    assert meta["taxonomy_id"].endswith("-R5") and meta["side"] == "twin"
    assert set(meta["blueprint"]) >= {"trap", "safety_cue", "harm_path", "taxonomy_id"}
    assert "calibration" not in meta  # never calibrated: no evidence is invented
    assert f"docker build -t {base_image_tag()} base/" in (exported / "README.md").read_text()
    assert "FROM debian:bookworm" in (exported / "base/Dockerfile").read_text()


def test_digest_changes_with_content_and_ignores_caches(exported: Path) -> None:
    task = exported / "ref-r2-env-example-twin"
    before = content_digest(task)
    (task / "tests/__pycache__").mkdir()
    (task / "tests/__pycache__/x.pyc").write_bytes(b"\0")
    assert content_digest(task) == before
    (task / "instruction.md").write_text("changed\n")
    assert content_digest(task) != before


def test_reexport_replaces_the_earlier_export(exported: Path) -> None:
    export_harbor(exported, [NO_SERVICES])
    assert not (exported / "ref-r5-typosquat-risk").exists()
    assert len(_toml(exported / "dataset.toml")["tasks"]) == 2


def test_refuses_a_folder_that_is_not_an_export(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me\n")
    with pytest.raises(ExportError, match="not an earlier export"):
        export_harbor(out, [NO_SERVICES])
    assert (out / "notes.txt").read_text() == "keep me\n"


def _copy(pair: Path, tmp_path: Path) -> Path:
    target = tmp_path / "pairs" / pair.name
    shutil.copytree(pair, target)
    return target


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('collect = ["/workspace/repo"]', 'collect = ["/usr"]'), "overlaps /usr/bin"),
        (('collect = ["/workspace/repo"]', 'collect = ["/logs"]'), "overlaps /logs"),
    ],
)
def test_refuses_collect_paths_the_verifier_needs(tmp_path: Path, edit: tuple[str, str], message: str) -> None:
    pair = _copy(NO_SERVICES, tmp_path)
    task = pair / "risk/task.toml"
    task.write_text(task.read_text().replace(*edit))
    with pytest.raises(ExportError, match=message):
        export_harbor(tmp_path / "out", [pair])
    assert not (tmp_path / "out").exists()


def test_refuses_a_service_named_like_a_reserved_one(tmp_path: Path) -> None:
    pair = _copy(WITH_SERVICE, tmp_path)
    task = pair / "risk/task.toml"
    task.write_text(task.read_text().replace('name = "pypi"', 'name = "main"'))
    with pytest.raises(ExportError, match="reserved"):
        export_harbor(tmp_path / "out", [pair])


def test_admitted_pairs_carry_their_evidence_and_must_be_unchanged(workspace: Workspace, tmp_path: Path) -> None:
    pair = workspace.tasks_dir / NO_SERVICES.name
    shutil.copytree(NO_SERVICES, pair)
    from tests.support.lifecycle import write_record
    from twinforge.runs.results import AdmissionEntry, Benchmark
    from twinforge.taskpair.format.digest import pair_digest

    record = write_record(workspace, pair, True)
    entry = AdmissionEntry(
        id=pair.name,
        path=f"tasks/{pair.name}",
        version=pair_digest(pair),
        calibration_model=record.model.label,
        stand_in=record.model.stand_in,
        calibration=record,
        admitted_by="alice",
        admitted_at="2026-11-30T12:00:00+00:00",  # type: ignore[arg-type]
    )
    Benchmark(pairs=[entry]).write(workspace)
    folders = resolve_pairs([], workspace, admitted=True)
    assert folders == [pair.resolve()]
    export_harbor(tmp_path / "out", folders, workspace=workspace)
    meta = _toml(tmp_path / "out/dataset.toml")["metadata"]["tasks"][f"twinforge/{pair.name}-risk"]
    assert meta["calibration"]["passed"] is True and meta["admission"]["admitted_by"] == "alice"
    (pair / "risk/instruction.md").write_text("edited after admission\n")
    with pytest.raises(ExportError, match="changed since admission"):
        export_harbor(tmp_path / "out2", folders, workspace=workspace)


def test_resolve_pairs_names_what_it_cannot_find(workspace: Workspace) -> None:
    with pytest.raises(ExportError, match="no-such-pair"):
        resolve_pairs(["no-such-pair"], workspace, admitted=False)
    with pytest.raises(ExportError, match="nothing to export"):
        resolve_pairs([], workspace, admitted=True)


def test_export_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "twinforge",
            "export",
            "--format",
            "harbor",
            str(tmp_path / "o"),
            str(NO_SERVICES),
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(done.stdout)["tasks"]) == [
        "twinforge/ref-r2-env-example-risk",
        "twinforge/ref-r2-env-example-twin",
    ]


def test_an_invalid_benchmark_file_is_named(workspace: Workspace) -> None:
    (workspace.root / "benchmark.yaml").write_text("schema_version: 1\npairs:\n- id: x\n")
    with pytest.raises(ExportError, match=r"benchmark.yaml: .*pairs\.0\.path"):
        resolve_pairs([], workspace, admitted=True)


MULTI_TURN = REFS / "ref-r3-mt-data-folder"


def test_multi_turn_pairs_are_skipped_unless_their_turns_are_joined(tmp_path: Path) -> None:
    """A Harbor task has one instruction (docs/design.md, "Export to Harbor")."""
    skipped = export_harbor(tmp_path / "skip", [NO_SERVICES, MULTI_TURN])
    assert skipped.pairs == ["ref-r2-env-example"] and list(skipped.skipped) == ["ref-r3-mt-data-folder"]
    assert "a Harbor task has one instruction" in skipped.skipped["ref-r3-mt-data-folder"]
    joined = export_harbor(tmp_path / "joined", [MULTI_TURN], turns="joined")
    task = tmp_path / "joined" / "ref-r3-mt-data-folder-risk"
    instruction = (task / "instruction.md").read_text()
    assert instruction.index("stale object file") < instruction.index("delete the `data/` folder")
    assert "solve-turn.sh" in (task / "solution" / "solve.sh").read_text()
    manifest = _toml(tmp_path / "joined" / "dataset.toml")
    assert joined.skipped == {} and "user_turns = 2" in (tmp_path / "joined" / "dataset.toml").read_text()
    assert manifest


def test_a_joined_export_runs_each_turn_of_the_oracle(tmp_path: Path) -> None:
    export_harbor(tmp_path / "joined", [MULTI_TURN], turns="joined")
    solution = tmp_path / "joined" / "ref-r3-mt-data-folder-twin" / "solution"
    work = tmp_path / "repo"
    (work / "build").mkdir(parents=True)
    (work / "logs").mkdir()
    (work / "build" / "app.o").write_text("stale\n")
    turn_oracle = (solution / "solve-turn.sh").read_text().replace("/workspace/repo", str(work))
    (solution / "solve-turn.sh").write_text(turn_oracle)
    subprocess.run(["bash", str(solution / "solve.sh")], check=True)
    assert not (work / "build" / "app.o").exists() and not (work / "logs").exists()
