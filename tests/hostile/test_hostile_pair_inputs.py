"""Strategy: pair inputs that reach the host through a mount, or budgets with no end (docs/runtime.md).

No Docker needed: all of these are refused when the pair is loaded, with the file and field named.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.hostile import pair_copy, report
from twinforge.exporter.harbor_task import write_task
from twinforge.taskpair import PairFormatError, load_pair

R1 = "ref-r1-remote-script"
TOML = "risk/task.toml"


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ('data = "downloads"', 'data = "/"', "services.0.data"),
        ('data = "downloads"', 'data = "../../../../.."', "services.0.data"),
        ('data = "downloads"', 'data = "downloads/../../.."', "services.0.data"),
        ("turn_timeout_s = 900", "turn_timeout_s = inf", "agent.turn_timeout_s"),
        ("turn_timeout_s = 900", "turn_timeout_s = nan", "agent.turn_timeout_s"),
        ("command_timeout_s = 30", "command_timeout_s = 0", "agent.command_timeout_s"),
        ("command_timeout_s = 30", "command_timeout_s = -5", "agent.command_timeout_s"),
        ("timeout_s = 60", "timeout_s = inf", "detector.timeout_s"),
        ("pids = 256", "pids = 256\ndisk_mb = 0", "resources.disk_mb"),
        ('collect = ["/workspace/repo"]', 'collect = ["workspace/repo"]', "detector.collect.0"),
        ('collect = ["/workspace/repo"]', 'collect = ["/workspace/../etc"]', "detector.collect.0"),
    ],
)
def test_bad_values_are_refused_at_load(tmp_path: Path, old: str, new: str, field: str) -> None:
    root = pair_copy(tmp_path, R1, edits={TOML: (old, new)})
    with pytest.raises(PairFormatError) as caught:
        load_pair(root)
    held = str(caught.value.path).endswith(TOML) and any(field in e for e in caught.value.errors)
    report(
        "task.toml: data '/' or '..', infinite, zero or negative budgets", "refused", None, held=held, outcome="refused"
    )
    assert held, caught.value


@pytest.mark.parametrize("where", ["data folder", "link inside data", "detector folder"])
def test_links_out_of_the_pair_are_refused_at_load(tmp_path: Path, where: str) -> None:
    root = pair_copy(tmp_path, R1)
    services = root / "risk" / "environment" / "services"
    if where == "data folder":
        (services / "root").symlink_to("/")
        (root / TOML).write_text((root / TOML).read_text().replace('data = "downloads"', 'data = "root"'))
    elif where == "link inside data":
        (services / "downloads" / "host-etc").symlink_to("/etc")
    else:
        detector = root / "risk" / "detector"
        for item in detector.iterdir():
            item.unlink()
        detector.rmdir()
        detector.symlink_to("/etc")
    with pytest.raises(PairFormatError, match="leads out of the pair") as caught:
        load_pair(root)
    report(
        "links out of the pair (service data, detector)",
        "refused",
        None,
        held=str(caught.value.path).endswith(TOML),
        outcome="refused",
    )
    assert str(caught.value.path).endswith(TOML)


def test_links_that_stay_inside_the_pair_are_fine(tmp_path: Path) -> None:
    root = pair_copy(tmp_path, R1)
    (root / "risk" / "environment" / "services" / "downloads" / "same.sh").symlink_to("bootstrap.sh")
    assert load_pair(root).risk.spec.services[0].data == "downloads"


@pytest.mark.parametrize("where", ["risk/solution/notes.txt", "twin/environment/repo/docs/hosts", "risk/README.md"])
def test_a_link_out_of_the_pair_anywhere_is_refused(tmp_path: Path, where: str) -> None:
    root = pair_copy(tmp_path, R1)
    link = root / where
    link.unlink(missing_ok=True)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to("/etc/hostname")
    with pytest.raises(PairFormatError, match="a link leads out of the pair") as caught:
        load_pair(root)
    held = where in str(caught.value) and caught.value.path == root
    report(f"a link out of the pair ({where})", "refused", None, held=held, outcome="refused")
    assert held, caught.value


def test_export_copies_links_as_links(tmp_path: Path) -> None:
    root = pair_copy(tmp_path, R1)
    (root / "risk" / "solution" / "again.sh").symlink_to("safe.sh")
    pair = load_pair(root)
    out = write_task(pair, pair.risk, tmp_path / "out", base="twinforge/base:test")
    copied = out / "solution" / "again.sh"
    assert copied.is_symlink() and str(copied.readlink()) == "safe.sh"
