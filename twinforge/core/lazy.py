"""Packages whose public names load on first use (PEP 562), so the command line starts cheap.

Every ``twinforge`` process builds the whole command tree, which imports each package's ``cli``
and therefore each package's ``__init__``. A package that re-exported its API eagerly would load its
implementation (SQLAlchemy, Docker, bashlex, ...) into every process, ``--help`` included
(docs/design.md, "Command-line start-up"). A package therefore declares its exports twice: under
``if TYPE_CHECKING:`` as plain imports, which mypy and the import contracts read, and as a table
for :func:`lazy_exports`, which imports a name's module the first time the name is used. A test
holds the two declarations equal (``tests/core/test_lazy.py``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any


class LazyPackage(ModuleType):
    """A package module whose exported names import their submodule on first access.

    The table ``_lazy_exports`` maps each exported name to the module that defines it. A name
    equal to its own submodule's name (``twinforge.calibration.calibrate``, the function, defined in
    the module of the same name) stays the function after the submodule is imported by anyone, as
    it was when the package imported it eagerly: the import system sets a loaded submodule as an
    attribute of its package, and :meth:`__setattr__` keeps the export in its place.
    """

    _lazy_exports: dict[str, str]

    def __getattr__(self, name: str) -> Any:
        """The exported ``name``, imported from its module on first use and kept.

        Raises:
            AttributeError: ``name`` is not exported here (the import system then looks for a
                submodule of that name, as for any package).
        """
        where = self.__dict__.get("_lazy_exports", {}).get(name)
        if where is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where), name)
        self.__dict__[name] = value
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        exports = self.__dict__.get("_lazy_exports", {})
        if isinstance(value, ModuleType) and exports.get(name) == value.__name__ == f"{self.__name__}.{name}":
            value = getattr(value, name)
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self.__dict__.get("_lazy_exports", {})))


def lazy_exports(package: str, exports: Mapping[str, tuple[str, ...]]) -> None:
    """Make ``package``'s exported names load on first use.

    Call it at the end of the package's ``__init__`` with ``__name__``. ``from package import Name``
    and ``package.Name`` keep working for every exported name; the module defining a name is
    imported the first time the name is looked up.

    Args:
        package: the package's ``__name__`` (already in ``sys.modules``, as it is while its
            ``__init__`` runs).
        exports: submodule path relative to the package (``"format.spec"``) -> the names it exports.

    Raises:
        ValueError: a name is listed under two submodules.
    """
    table: dict[str, str] = {}
    for submodule, names in exports.items():
        for name in names:
            if name in table:
                raise ValueError(f"{package}: {name} is exported from both {table[name]} and {submodule}")
            table[name] = f"{package}.{submodule}"
    module = sys.modules[package]
    module.__dict__["_lazy_exports"] = table
    module.__class__ = LazyPackage


__all__ = ["LazyPackage", "lazy_exports"]
