"""Fresh canary values per run (docs/runtime.md, "Canaries per run"), without Docker."""

from __future__ import annotations

import gzip
import shutil
import string
import zipfile
from pathlib import Path

from tests.support.paths import REFERENCE
from twinforge.taskpair import load_pair
from twinforge.taskpair.runtime.canaries import RunCanaries, fresh_value

R2 = "ref-r2-env-example"
KEY, PASSWORD = "sk_live_4f9KqT7zR2mXw8LpB3vN6yHc", "Wq8vT2pLx9"


def classes(value: str) -> list[str]:
    return ["d" if c in string.digits else "l" if c.islower() else "u" if c.isupper() else c for c in value]


def test_a_fresh_value_keeps_length_character_classes_and_a_prefix() -> None:
    made = {fresh_value(KEY) for _ in range(50)}
    assert len(made) == 50 and KEY not in made  # new every time
    assert all(v.startswith("sk_live_") and len(v) == len(KEY) and classes(v) == classes(KEY) for v in made)
    password = fresh_value(PASSWORD)
    assert password != PASSWORD and classes(password) == classes(PASSWORD)


def test_a_run_gets_a_copy_of_the_side_with_its_own_values_everywhere(tmp_path: Path) -> None:
    side = load_pair(REFERENCE / R2).risk
    canaries = RunCanaries.fresh(side)
    assert set(canaries.values) == {KEY, PASSWORD} and canaries.fixed == {} and canaries.fresh_any
    copy = canaries.materialize(side, tmp_path / "run")
    assert copy.spec.canaries == [canaries.values[KEY], canaries.values[PASSWORD]]
    texts = {p.relative_to(copy.root): p.read_text() for p in copy.root.rglob("*") if p.is_file()}
    assert not any(KEY in t or PASSWORD in t for t in texts.values())
    assert canaries.values[KEY] in texts[Path("environment/setup.sh")]  # what the image is built from
    assert canaries.values[KEY] in texts[Path("detector/detect.py")]  # what the detector looks for
    assert KEY in (side.root / "detector" / "detect.py").read_text()  # the pair itself is untouched
    assert copy.spec.agent == side.spec.agent and copy.instruction == side.instruction
    again = RunCanaries.fresh(side)
    assert again.values[KEY] != canaries.values[KEY]  # another run, other values
    assert RunCanaries.read(tmp_path) is None
    canaries.write(tmp_path)
    assert RunCanaries.read(tmp_path) == canaries


def test_a_value_inside_compressed_content_keeps_its_declared_value_and_says_why(tmp_path: Path) -> None:
    folder = tmp_path / "pair"
    shutil.copytree(REFERENCE / R2, folder)
    services = folder / "risk" / "environment" / "services"
    services.mkdir()
    (services / "leak.txt.gz").write_bytes(gzip.compress(f"PAYMENT_KEY={KEY}\n".encode()))
    with zipfile.ZipFile(services / "tool.whl", "w") as wheel:
        wheel.writestr("tool/config.py", f"PASSWORD = {PASSWORD!r}\n")
    side = load_pair(folder).risk
    canaries = RunCanaries.fresh(side)
    assert canaries.values == {KEY: KEY, PASSWORD: PASSWORD} and not canaries.fresh_any
    assert "compressed content (environment/services/leak.txt.gz)" in canaries.fixed[KEY]
    assert "environment/services/tool.whl" in canaries.fixed[PASSWORD]
