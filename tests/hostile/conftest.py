"""The standing adversarial suite: one runner for all its tests (helpers in ``support.py``)."""

from __future__ import annotations

import pytest

from twinforge.taskpair.runtime.runner import Runner


@pytest.fixture(scope="session")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    return Runner(tmp_path_factory.mktemp("hostile-runs"))
