"""A pytest plugin for tests/test_resource_groups.py: prints each collected test's xdist group."""

from __future__ import annotations

import pytest


def pytest_collection_finish(session: pytest.Session) -> None:
    for item in session.items:
        groups = sorted(str(m.args[0]) for m in item.iter_markers("xdist_group"))
        print(f"GROUP {item.nodeid} {','.join(groups) or '-'}")
