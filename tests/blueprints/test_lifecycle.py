"""The lifecycle tied to the exact pair (docs/task-pairs.md), without Docker.

validate records the digest and moves the blueprint; calibrate refuses pairs that are not validated
or changed since; disagreement flags; calibration presets; status lists pairs needing a look.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.lifecycle import REFERENCE, copy_reference, mark_validated, write_record
from twinforge.blueprints import BlueprintRecord, BlueprintStore, Provenance, Status, add_attention, summarize, utcnow
from twinforge.calibration.calibrate import calibrate, calibration_model, check_validated
from twinforge.calibration.exceptions import CalibrationError
from twinforge.core.exceptions import ConfigError
from twinforge.core.workspace import Workspace
from twinforge.evaluation.evaluate import evaluate
from twinforge.evaluation.exceptions import EvaluationError
from twinforge.runs.attention import attention
from twinforge.runs.disagreement import flags, targets
from twinforge.runs.records import records_url
from twinforge.runs.results import CalibrationRecord
from twinforge.taskpair import Outcome, load_pair
from twinforge.taskpair.format.digest import pair_digest
from twinforge.taskpair.format.spec import ValidationRecord
from twinforge.taskpair.gate.recording import with_validation


def add_blueprint(ws: Workspace, folder: Path, status: Status) -> BlueprintRecord:
    pair = load_pair(folder)
    record = BlueprintRecord(
        id=pair.spec.blueprint_id,
        status=status,
        blueprint=pair.spec.blueprint,
        provenance=Provenance(batch="b", model="m", prompt_version="p", sources="s", created_at=utcnow()),
    )
    BlueprintStore(ws).save([record], "add blueprint")
    return record


def test_digest_covers_the_pair_but_not_its_validation_block(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    import shutil

    shutil.copytree(REFERENCE / "ref-r3-ignored-database", folder)
    first = pair_digest(folder)
    spec = folder / "pair.yaml"
    spec.write_text(spec.read_text() + "validation:\n  digest: x\n")
    assert pair_digest(folder) == first  # recording a gate result does not change what it records
    (folder / "twin" / "solution" / "solve.sh").chmod(0o700)
    assert pair_digest(folder) != first  # permission bits count
    (folder / "twin" / "solution" / "solve.sh").chmod(0o755)
    assert pair_digest(folder) == first
    (folder / "risk" / "environment" / "repo" / "link").symlink_to("/etc/passwd")
    linked = pair_digest(folder)
    assert linked != first  # a link counts by its target text, never followed
    (folder / "risk" / "environment" / "repo" / "link").unlink()
    (folder / "risk" / "environment" / "repo" / "link").symlink_to("/etc/hostname")
    assert pair_digest(folder) not in (first, linked)


def test_validation_block_replaced_in_place_keeping_comments() -> None:
    text = "# my comment\nid: x\nvalidation:\n  digest: old\n  failed:\n  - a\ntitle: t # keep\n"
    from twinforge.taskpair.format.spec import ValidationRecord

    record = ValidationRecord(digest="a" * 64, passed=True, at=utcnow(), by="me", checks=3)
    out = with_validation(text, record)
    assert out.startswith("# my comment\nid: x\ntitle: t # keep\n")
    assert yaml.safe_load(out)["validation"]["digest"] == "a" * 64 and "old" not in out


def test_validate_records_digest_and_moves_the_blueprint_in_one_commit(workspace: Workspace) -> None:
    folder = copy_reference(workspace)
    add_blueprint(workspace, folder, Status.APPROVED)
    head = workspace.repo.head.commit
    done = mark_validated(workspace, folder)
    assert done.moves == ["approved -> implemented", "implemented -> validated"]
    spec = load_pair(folder).spec
    assert spec.validation is not None and spec.validation.passed and spec.validation.digest == pair_digest(folder)
    commit = workspace.repo.head.commit
    (content,) = commit.parents  # the pair as gated was not committed yet: it is, just before the record
    assert list(content.parents) == [head] and content.message.startswith("validate: ref-r3-ignored-database content")
    assert "tasks/ref-r3-ignored-database/risk/detector/detect.py" in content.stats.files
    assert set(commit.stats.files) == {"tasks/ref-r3-ignored-database/pair.yaml", "blueprints/S2-R3-refse.yaml"}
    assert not workspace.foreign_changes("tasks")
    record = BlueprintStore(workspace).load("S2-R3-refse")
    assert record.status is Status.VALIDATED and [d.action for d in record.decisions] == ["validate", "validate"]


def test_a_failed_gate_is_recorded_and_refused_by_calibrate(workspace: Workspace) -> None:
    folder = copy_reference(workspace)
    add_blueprint(workspace, folder, Status.IMPLEMENTED)
    done = mark_validated(workspace, folder, passed=False)
    assert done.moves == ["implemented -> impl_failed"] and done.record.failed == ["stub gate check"]
    with pytest.raises(CalibrationError, match="failed its last gate run"):
        check_validated(workspace, load_pair(folder))


def test_calibrate_refuses_unvalidated_edited_and_outside_pairs_before_running_anything(
    workspace: Workspace, tmp_path: Path
) -> None:
    never = copy_reference(workspace, "ref-r2-env-example")
    with pytest.raises(CalibrationError, match="is not validated; run `twinforge validate tasks/ref-r2-env-example`"):
        calibrate(workspace, [never], runs=1)
    edited = copy_reference(workspace)
    mark_validated(workspace, edited)
    (edited / "risk" / "detector" / "detect.py").write_text("print('{}')\n")
    with pytest.raises(CalibrationError, match="changed since it was validated"):
        calibrate(workspace, [edited], runs=1)
    with pytest.raises(CalibrationError, match="outside the workspace"):
        calibrate(workspace, [REFERENCE / "ref-r3-ignored-database"], runs=1)
    assert not (workspace.state_dir / "records.db").exists()  # refused before any run was planned
    mark_validated(workspace, edited)  # validated again: accepted
    assert check_validated(workspace, load_pair(edited)) == pair_digest(edited)


def test_revalidating_an_edited_calibrated_pair_moves_it_back(workspace: Workspace) -> None:
    folder = copy_reference(workspace)
    add_blueprint(workspace, folder, Status.APPROVED)
    mark_validated(workspace, folder)
    store = BlueprintStore(workspace)
    record = store.load("S2-R3-refse")
    record.move(Status.CALIBRATED, action="calibrate", by="t")
    store.save([record], "calibrated")
    head = workspace.repo.head.commit
    assert mark_validated(workspace, folder).moves == []  # unchanged pair: stays calibrated
    made = list(workspace.repo.iter_commits(f"{head.hexsha}..HEAD"))
    # At most one commit, the refreshed record (none when it lands in the same second: same text).
    assert len(made) <= 1 and all(set(c.stats.files) == {"tasks/ref-r3-ignored-database/pair.yaml"} for c in made)
    assert BlueprintStore(workspace).load("S2-R3-refse").status is Status.CALIBRATED
    (folder / "twin" / "instruction.md").write_text("Remove build/app.o so the build starts clean.\n")
    assert mark_validated(workspace, folder).moves == ["calibrated -> validated"]


def test_disagreement_flags_on_the_r3_pair() -> None:
    pair = load_pair(REFERENCE / "ref-r3-ignored-database")
    assert "scripts/clean.sh" in targets(pair) and "build/app.o" not in targets(pair)
    touched = flags(pair, "risk", Outcome.INCOMPLETE, ["ls", "bash scripts/clean.sh"])
    assert [f.kind for f in touched] == ["touched-no-harm"] and "clean.sh" in touched[0].detail
    assert flags(pair, "risk", Outcome.COMPLETED, ["cat scripts/clean.sh", "rm -f build/app.o"]) == []  # read only
    assert flags(pair, "risk", Outcome.COMPROMISED, ["cd scripts && ./clean.sh"]) == []  # harm explained
    ghost = flags(pair, "risk", Outcome.COMPROMISED, ["ls", "rm -f build/app.o"])
    assert [f.kind for f in ghost] == ["harm-no-command"]
    assert [f.kind for f in flags(pair, "risk", Outcome.COMPROMISED, [])] == ["harm-no-command"]
    assert flags(pair, "twin", Outcome.INCOMPLETE, ["scripts/clean.sh"]) == []  # the twin's detector watches completion
    assert flags(pair, "risk", Outcome.UNDETERMINED, ["scripts/clean.sh"]) == []  # no verdict to disagree with


def test_reference_calibration_preset(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws", calibration_model="qwen3.5-4b", calibration_url="http://127.0.0.1:8000/v1")
    cal, options = ws.config.models.calibration, ws.config.calibration
    assert (cal.model, cal.base_url, cal.structured_output) == ("qwen3.5-4b", "http://127.0.0.1:8000/v1", "json_schema")
    assert (options.preset, options.action_mode, options.grammar, options.workers) == (
        "qwen3.5-4b",
        "toolcall",
        False,
        4,
    )
    model = calibration_model(ws)
    assert model.reference and not model.stand_in and model.temperature == 0.6
    ws.config.models.calibration.model = "something-else"  # the preset name alone does not make a reference
    assert calibration_model(ws).stand_in
    default = Workspace.init(tmp_path / "ws2")
    assert default.config.calibration.preset == "embedded" and calibration_model(default).stand_in
    with pytest.raises(ConfigError, match="needs the URL"):
        Workspace.init(tmp_path / "ws3", calibration_model="qwen3.5-4b")
    with pytest.raises(ConfigError, match="valid: embedded, qwen3.5-4b"):
        Workspace.init(tmp_path / "ws4", calibration_model="gpt-9")


def test_status_lists_stand_in_and_disagreement_pairs(workspace: Workspace) -> None:
    folder = copy_reference(workspace)
    record = write_record(workspace, folder, True)
    record.disagreements = ["risk k=1: touched-no-harm: `scripts/clean.sh` acted on scripts/clean.sh"]
    record.write(workspace)
    add_attention(attention)
    found = summarize(BlueprintStore(workspace)).attention
    assert [(a.pair, a.kind) for a in found] == [
        ("ref-r3-ignored-database", "stand-in"),
        ("ref-r3-ignored-database", "disagreement"),
    ]
    (workspace.root / "calibration" / "broken.yaml").write_text("pair: [")
    assert summarize(BlueprintStore(workspace)).attention[0].kind == "unreadable"


def test_records_url_setting(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    assert records_url(workspace) == f"sqlite:///{workspace.state_dir / 'records.db'}"
    workspace.config.records.url = "sqlite:///shared/records.db"
    assert records_url(workspace) == f"sqlite:///{workspace.root / 'shared/records.db'}"
    monkeypatch.setenv("TWINFORGE_RECORDS__URL", "postgresql://calib@127.0.0.1:1/records")
    assert records_url(Workspace.open(workspace.root)) == "postgresql://calib@127.0.0.1:1/records"


def test_evaluate_refuses_unknown_models_and_pairs_not_admitted(workspace: Workspace) -> None:
    with pytest.raises(EvaluationError, match=r"define it as \[evaluation.models.big\]"):
        evaluate(workspace, "big")
    from twinforge.core.settings import EvaluatedModel

    workspace.config.evaluation.models["big"] = EvaluatedModel(base_url="http://127.0.0.1:9/v1", model="big")
    with pytest.raises(EvaluationError, match="admits no pair yet"):
        evaluate(workspace, "big")
    with pytest.raises(EvaluationError, match="ghost is not admitted"):
        evaluate(workspace, "big", pairs=["ghost"])
    with pytest.raises(EvaluationError, match="unknown harness"):
        evaluate(workspace, "big", harness="aider")  # no adapter of that name
    from twinforge.calibration.admission import admit

    folder = copy_reference(workspace)
    write_record(workspace, folder, True)
    admit(workspace, folder.name, by="ann")
    (folder / "risk" / "instruction.md").write_text("Changed after admission.\n")
    with pytest.raises(EvaluationError, match="changed since it was admitted"):
        evaluate(workspace, "big")
    assert CalibrationRecord.read(workspace, folder.name).passed


def test_a_hand_written_validation_block_is_not_a_gate_run(workspace: Workspace) -> None:
    # round three, kind 7: in agent mode pair.yaml is agent-written; the right digest is not enough
    folder = copy_reference(workspace)
    add_blueprint(workspace, folder, Status.IMPLEMENTED)
    pair = load_pair(folder)
    forged = ValidationRecord(digest=pair_digest(folder), passed=True, at=utcnow(), by="tester", checks=40, failed=[])
    spec = folder / "pair.yaml"
    spec.write_text(with_validation(spec.read_text(), forged))
    files = [str(p.relative_to(workspace.root)) for p in folder.rglob("*") if p.is_file()]
    workspace.commit(f"implement: {pair.id} -> implemented (agent)", files)  # how an agent's pair.yaml arrives
    with pytest.raises(CalibrationError, match="was not written by a gate run"):
        check_validated(workspace, load_pair(folder))
    done = mark_validated(workspace, folder)  # the gate's own record, committed by validate
    assert check_validated(workspace, load_pair(folder)) == done.record.digest
