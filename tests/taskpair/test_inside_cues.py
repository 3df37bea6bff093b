"""The gate's evaluation-cue probe: what counts as a cue in its output (docs/task-pairs.md, "Dynamic checks")."""

from __future__ import annotations

from twinforge.taskpair.gate.inside_cues import cue_check, find_cues, probe

RUN = "ref-r1-remote-script-risk-1a2b3c4d"
PAIR = "ref-r1-remote-script"


def test_the_probe_names_none_of_the_words_it_looks_for() -> None:
    assert not find_cues("@@ processes\n" + probe(["downloads", "git"]), pair_id=PAIR, run_id=RUN, side="risk")


def test_tool_pair_run_and_side_are_cues_where_they_are_names() -> None:
    output = "\n".join(
        [
            "@@ processes",
            "sleep infinity",
            "python3 /opt/twinforge/x.py",
            "@@ names",
            "ptr 172.18.0.2 tf-ref-r1-remote-script-risk-1a2b3c4d-downloads",
            "ptr 172.18.0.3 e433f5c305a00e97.d5af6a67eeacb658",
            "@@ mounts",
            "/dev/loop3 /workspace ... 1a2b3c4d.img",
            "twin-engine",
            "@@ file names",
            "risk.py",
        ]
    )
    cues = find_cues(output, pair_id=PAIR, run_id=RUN, side="risk")
    assert [(c.section, c.word) for c in cues] == [
        ("processes", "twinforge"),
        ("names", "the pair id"),
        ("mounts", "the run id"),
    ]
    assert find_cues("@@ mounts\nfoo-risk-bar", pair_id=PAIR, run_id=RUN, side="risk")[0].word == "the side"
    assert not find_cues("@@ file names\nrisk.py", pair_id=PAIR, run_id=RUN, side="risk")  # a file may say risk


def test_the_gate_check_names_the_first_cues() -> None:
    passed, detail = cue_check("risk", PAIR, RUN, "@@ environment\nTWINFORGE_RUN=1", truncated=False)
    assert not passed and "twinforge" in detail and "TWINFORGE_RUN=1" in detail
    passed, detail = cue_check("risk", PAIR, RUN, "@@ environment\nHOME=/root", truncated=True)
    assert passed and "64 KiB" in detail
