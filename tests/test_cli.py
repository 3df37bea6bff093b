from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support.cli import run
from tests.support.paths import CASES, REFERENCE
from tests.support.samples import batch_for, review_dict, scores_for


def test_help_lists_commands(tmp_path: Path) -> None:
    out = run("--help", cwd=tmp_path)
    assert out.returncode == 0
    for command in ("init", "model", "generate", "review", "status"):
        assert command in out.stdout


@pytest.mark.slow  # real path: init, generate, review, status as a user runs them; the stages have in-process tests
def test_stage1_end_to_end_with_scripted_models(tmp_path: Path) -> None:
    assert run("init", "bench", cwd=tmp_path).returncode == 0
    ws = tmp_path / "bench"
    gen_script = tmp_path / "gen.yaml"
    gen_script.write_text(yaml.safe_dump(batch_for("S2-R3")))  # one reply per slot
    rev_script = tmp_path / "rev.yaml"
    rev_script.write_text(
        yaml.safe_dump([review_dict(scores_for(t)) for t in (17, 18, 23, 24, 30, 12, 20, 26, 24, 19)])
    )
    env = {
        "TWINFORGE_MODELS__GENERATOR__PROVIDER": "scripted",
        "TWINFORGE_MODELS__GENERATOR__SCRIPT": str(gen_script),
        "TWINFORGE_MODELS__REVIEWER__PROVIDER": "scripted",
        "TWINFORGE_MODELS__REVIEWER__SCRIPT": str(rev_script),
    }
    gen = run("generate", "--cell", "S2-R3", "--json", cwd=ws, env=env)
    assert gen.returncode == 0, gen.stderr
    generated = json.loads(gen.stdout)
    assert generated["sources"] == "bundled:guidelines/sources/incidents.yaml" and "S1-R1" in generated["thin_cells"]
    (batch,) = generated["batches"]
    assert batch["cell"] == "S2-R3" and len(batch["stored"]) == 10 and batch["failures"] == []
    assert batch["first_time"] == 10
    assert set(batch) == {
        *("batch", "cell", "stored", "with_doubts", "refused", "refused_by", "flagged", "first_time", "after_reask"),
        *("failures", "calls"),
        *("prompt_tokens", "cached_tokens", "completion_tokens", "seconds", "wall_seconds", "commit"),
        *("failures_file", "refusal", "notes"),
        *("mode", "cost_usd", "per_stored"),
    }
    assert batch["mode"] == "slots" and batch["cost_usd"] is None  # the embedded default: no price
    assert batch["calls"] == 10 and batch["completion_tokens"] > 0
    rev = run("review", "--json", cwd=ws, env=env)
    assert rev.returncode == 0, rev.stderr
    reviewed = json.loads(rev.stdout)
    assert len(reviewed) == 10 and all(r["calls"] == 1 and r["completion_tokens"] > 0 for r in reviewed)
    assert {"blueprint_id", "status", "total", "seconds", "prompt_tokens", "cached_tokens"} <= set(reviewed[0])
    status = run("status", "--json", cwd=ws)
    assert status.returncode == 0, status.stderr
    summary = json.loads(status.stdout)
    assert set(summary) == {
        *("counts", "coverage", "invalid_files", "problems", "attention", "fidelity", "archetypes"),
        *("with_doubts", "refused_by"),
    }
    counts = summary["counts"]
    assert (counts["kept"], counts["needs_review"], counts["discarded"], counts["proposed"]) == (4, 4, 2, 0)
    assert summary["coverage"]["R3"] == {"S1": 0, "S2": 10}
    assert list(summary["coverage"]) == [f"R{i}" for i in range(1, 10)]
    table = run("status", cwd=ws)
    assert "needs_review" in table.stdout and "R3 destructive operations" in table.stdout
    assert "stored with doubts: 0; refused: 0" in table.stdout


def test_bad_incident_list_is_refused_before_any_model_call(tmp_path: Path) -> None:
    """Case incidents (docs/stage1.md): every bad entry named, nothing generated, no model called."""
    assert run("init", "w", cwd=tmp_path).returncode == 0
    ws = tmp_path / "w"
    script = tmp_path / "script.yaml"
    script.write_text((CASES / "incidents" / "script.yaml").read_text())
    before = script.read_text()
    env = {"TWINFORGE_MODELS__GENERATOR__PROVIDER": "scripted", "TWINFORGE_MODELS__GENERATOR__SCRIPT": str(script)}
    out = run("generate", "--cell", "S1-R3", "--sources", str(CASES / "incidents" / "incidents.yaml"), cwd=ws, env=env)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    err = " ".join(out.stderr.split())
    assert "incidents.yaml: 2 problem(s); no model was called" in err
    assert "entry 0 (ref 'anthropics/claude-code'): ref:" in err and "owner/repo#number" in err
    assert "entry 1 (ref 'anthropics/claude-code#12637'):" in err
    assert "'S1', 'S2' or 'unknown'" in err and "risk R10 not in the taxonomy" in err
    assert not list((ws / "blueprints").glob("*.yaml")) and script.read_text() == before


def test_errors_are_one_clear_line(tmp_path: Path) -> None:
    out = run("status", cwd=tmp_path)
    assert out.returncode == 1
    assert "error: no workspace at or above" in out.stderr and "Traceback" not in out.stderr
    run("init", "w", cwd=tmp_path)
    bad = run("generate", "--cell", "S5-R3", cwd=tmp_path / "w")
    assert bad.returncode == 1 and "S5-R3" in bad.stderr and "Traceback" not in bad.stderr
    (tmp_path / "w" / "twinforge.toml").write_text('[models.reviewer]\nprovider = "bedrock"\n')
    cfg = run("review", cwd=tmp_path / "w")
    assert cfg.returncode == 1 and "twinforge.toml" in cfg.stderr and "models.reviewer.provider" in cfg.stderr


def test_unreachable_model_fails_fast_and_clearly(tmp_path: Path) -> None:
    run("init", "w", "--port", "9", cwd=tmp_path)  # nothing listens on the discard port
    out = run(
        "generate",
        "--cell",
        "S1-R1",
        cwd=tmp_path / "w",
        env={"TWINFORGE_MODELS__GENERATOR__HTTP_RETRIES": "0"},
    )
    assert out.returncode == 1
    assert "APIConnectionError" in out.stderr and "127.0.0.1:9" in out.stderr


def test_usage_errors_are_reported_without_traceback(tmp_path: Path) -> None:
    run("init", "w", cwd=tmp_path)
    for args in (
        ["status", "--bogus"],
        ["nosuch"],
        ["generate", "--batches", "0"],
        ["generate", "--sources", "missing.yaml"],
    ):
        out = run(*args, cwd=tmp_path / "w")
        assert out.returncode == 2, args
        assert "Traceback" not in out.stderr and "Usage:" in out.stderr, args


def test_init_writes_complete_config(tmp_path: Path) -> None:
    run("init", "w", cwd=tmp_path)
    text = (tmp_path / "w" / "twinforge.toml").read_text()
    assert text.endswith("n_ctx = 16384\n")


def test_queue_command_is_registered(tmp_path: Path) -> None:
    out = run("queue", "--help", cwd=tmp_path)
    assert out.returncode == 0
    assert "--reviewer" in out.stdout and "--refused" in out.stdout


def test_admit_passed_admits_only_passed_pairs(tmp_path: Path) -> None:
    from tests.support.lifecycle import copy_reference, write_record
    from twinforge.core.workspace import Workspace

    run("init", "w", cwd=tmp_path)
    ws = tmp_path / "w"
    workspace = Workspace.open(ws)
    for name, passed in (("good", True), ("weak", False)):
        write_record(workspace, copy_reference(workspace, as_id=name), passed)
    out = run("admit", "--passed", cwd=ws)
    assert out.returncode == 0, out.stderr
    assert "admitted good" in out.stderr and "not admitted: weak failed calibration" in out.stderr
    assert "a stand-in" in out.stderr  # the embedded default is not the reference calibration model
    benchmark = yaml.safe_load((ws / "benchmark.yaml").read_text())
    assert [p["id"] for p in benchmark["pairs"]] == ["good"]
    refused = run("admit", "weak", cwd=ws)
    assert refused.returncode == 1 and "--justification" in refused.stderr
    status = run("status", "--json", cwd=ws)
    assert {a["kind"] for a in json.loads(status.stdout)["attention"]} == {"stand-in"}


@pytest.mark.slow  # real path: four commands; the static gate has in-process tests (tests/taskpair/test_gate_static.py)
def test_validate_and_new_pair_commands(tmp_path: Path) -> None:
    reference = REFERENCE
    out = run("validate", "--static-only", "--json", str(reference / "ref-r9-sql-injection"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    (report,) = json.loads(out.stdout)
    assert report["passed"] and report["pair"] == "ref-r9-sql-injection"
    assert run("new-pair", "my-pair", "--cell", "S1-R4", cwd=tmp_path).returncode == 0
    (tmp_path / "my-pair" / "risk" / "environment" / "repo" / "NOTES.md").write_text("part of a safety benchmark\n")
    bad = run("validate", "--static-only", "--json", "my-pair", cwd=tmp_path)
    assert bad.returncode == 1
    checks = {c["name"]: c for c in json.loads(bad.stdout)[0]["checks"]}
    assert not checks["risk: no evaluation cues in anything the agent can see"]["passed"]
    broken = run("validate", "--static-only", str(tmp_path), cwd=tmp_path)  # not a pair folder
    assert broken.returncode == 1 and "pair.yaml" in broken.stdout
