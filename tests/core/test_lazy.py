"""Packages whose names load on first use (twinforge/core/lazy.py; docs/design.md, "Command-line start-up")."""

from __future__ import annotations

import ast
import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import twinforge
from twinforge.core.lazy import LazyPackage, lazy_exports

INIT = """
from twinforge.core.lazy import lazy_exports

__all__ = ["Alpha", "beta", "gamma"]

lazy_exports(__name__, {"alpha": ("Alpha",), "beta": ("beta",), "deep.gamma": ("gamma",)})
"""


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A throwaway lazy package on disk: ``Alpha`` in alpha.py, ``beta`` in beta.py, ``gamma`` in deep/gamma.py."""
    name = f"lazy_sample_{tmp_path.name.replace('-', '_')}"
    root = tmp_path / name
    (root / "deep").mkdir(parents=True)
    (root / "__init__.py").write_text(INIT)
    (root / "alpha.py").write_text("class Alpha:\n    pass\n")
    (root / "beta.py").write_text("def beta() -> str:\n    return 'the function'\n")
    (root / "deep" / "__init__.py").write_text("")
    (root / "deep" / "gamma.py").write_text("gamma = 3\n")
    (root / "plain.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
        del sys.modules[module]


def test_names_load_on_first_use(package: str) -> None:
    pkg = importlib.import_module(package)
    assert isinstance(pkg, LazyPackage)
    assert f"{package}.alpha" not in sys.modules and f"{package}.deep.gamma" not in sys.modules
    alpha = importlib.import_module(f"{package}.alpha")
    assert pkg.Alpha is alpha.Alpha
    assert "Alpha" in vars(pkg)  # kept: the next lookup does not go through __getattr__
    namespace: dict[str, object] = {}
    exec(f"from {package} import gamma", namespace)
    assert namespace["gamma"] == 3 and f"{package}.deep.gamma" in sys.modules
    assert {"Alpha", "beta", "gamma"} <= set(dir(pkg))


def test_submodules_and_unknown_names(package: str) -> None:
    pkg = importlib.import_module(package)
    namespace: dict[str, object] = {}
    exec(f"from {package} import plain", namespace)  # not an export: the import system finds the submodule
    assert getattr(namespace["plain"], "VALUE", None) == 1
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'missing'"):
        _ = pkg.missing
    with pytest.raises(ImportError, match="missing"):
        exec(f"from {package} import missing", {})


def test_an_export_named_like_its_submodule_stays_the_export(package: str) -> None:
    # As with an eager `from .beta import beta`: the package's `beta` is the function, even after
    # someone imports the submodule `beta` directly (the import system sets it on the package).
    beta_module = importlib.import_module(f"{package}.beta")
    pkg = sys.modules[package]
    assert pkg.beta is beta_module.beta
    assert pkg.beta() == "the function"
    namespace: dict[str, object] = {}
    exec(f"from {package}.beta import beta", namespace)
    assert namespace["beta"] is beta_module.beta


def test_a_name_exported_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="Alpha is exported from both"):
        lazy_exports(__name__, {"a": ("Alpha",), "b": ("Alpha",)})


def _lazy_packages() -> list[str]:
    """Every twinforge package whose ``__init__`` calls ``lazy_exports`` (the repository's folders included)."""
    root = Path(twinforge.__file__).parent
    found = []
    for folder, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = [d for d in dirs if d not in {"in_container", "guidelines", "__pycache__"}]
        if "__init__.py" in files and "lazy_exports(" in (Path(folder) / "__init__.py").read_text():
            found.append(".".join(("twinforge", *Path(folder).relative_to(root).parts)))
    return sorted(found)


def _type_checking_imports(package: str) -> dict[str, str]:
    """Name -> defining module, as the ``if TYPE_CHECKING:`` block of the package's ``__init__`` imports it."""
    source = Path(importlib.import_module(package).__file__ or "").read_text()
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module, ast.dump(statement)
                found.update({alias.name: statement.module for alias in statement.names})
    return found


LAZY_PACKAGES = _lazy_packages()


def test_every_stage_and_domain_package_is_lazy() -> None:
    expected = {"blueprints", "calibration", "exporter", "generator", "harness", "implementer", "observer"}
    expected |= {"reviewer", "taskpair", "viewer", "core", "core.localmodel"}
    assert {f"twinforge.{p}" for p in expected} <= set(LAZY_PACKAGES)


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_declared_exports_agree_and_resolve(package: str) -> None:
    pkg = importlib.import_module(package)
    table: dict[str, str] = vars(pkg)["_lazy_exports"]
    assert _type_checking_imports(package) == table, "the TYPE_CHECKING imports and the lazy table differ"
    assert sorted(pkg.__all__) == sorted(table), "__all__ and the lazy table differ"
    for name, module in table.items():
        defined = getattr(importlib.import_module(module), name)
        assert getattr(pkg, name) is defined, f"{package}.{name}"
