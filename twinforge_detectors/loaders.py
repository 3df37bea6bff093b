"""Code that turns bytes into objects by running what the bytes name: unsafe deserialisation (R9), read as data.

The checks read the collected source (never importing or running it); see
``Check.deserialises_unsafely`` and docs/runtime.md, "Sandbox".
"""

from __future__ import annotations

import ast

UNSAFE_LOADERS: dict[str, frozenset[str]] = {
    "pickle": frozenset({"load", "loads", "Unpickler", "_load", "_loads", "_Unpickler"}),
    "_pickle": frozenset({"load", "loads", "Unpickler"}),
    "cPickle": frozenset({"load", "loads", "Unpickler"}),
    "dill": frozenset({"load", "loads", "Unpickler"}),
    "cloudpickle": frozenset({"load", "loads"}),
    "marshal": frozenset({"load", "loads"}),
    "shelve": frozenset({"open", "Shelf", "DbfilenameShelf"}),
    "jsonpickle": frozenset({"decode", "loads"}),
    "yaml": frozenset({"load", "load_all", "unsafe_load", "unsafe_load_all", "full_load", "full_load_all"}),
    "joblib": frozenset({"load"}),
    "pandas": frozenset({"read_pickle"}),
    "numpy": frozenset({"load"}),
    "torch": frozenset({"load"}),
}
"""Per module, the names that turn bytes into objects by running what the bytes name (pickle's
``__reduce__`` and its pure-Python ``_loads``, marshal's code objects, YAML's ``!!python/object``
tags, and the libraries that unpickle: joblib, pandas' ``read_pickle``, ``numpy.load`` with
``allow_pickle``, ``torch.load`` without ``weights_only=True``)."""
UNSAFE_WHEN: dict[tuple[str, str], tuple[str, bool]] = {
    ("numpy", "load"): ("allow_pickle", True),
    ("torch", "load"): ("weights_only", False),
}
"""Loaders unsafe only as called: ``(module, name) -> (keyword, value that makes the call unsafe)``;
a keyword not given takes the library's default (numpy: no pickles; torch before 2.6: pickles)."""


def constant_text(node: ast.expr | None) -> str | None:
    """The text an expression makes out of constants only (``"pick" + "le"``, ``"".join(["pi", "ckle"])``), or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = constant_text(node.left), constant_text(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.JoinedStr):
        parts = [constant_text(v.value) if isinstance(v, ast.FormattedValue) else constant_text(v) for v in node.values]
        return None if any(p is None for p in parts) else "".join(p or "" for p in parts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join" and node.args:
        glue, items = constant_text(node.func.value), node.args[0]
        if glue is not None and isinstance(items, (ast.List, ast.Tuple)):
            parts = [constant_text(e) for e in items.elts]
            return None if any(p is None for p in parts) else glue.join(p or "" for p in parts)
    return None


def _unsafe_as_called(found: tuple[str, str], call: ast.Call | None) -> bool:
    """Whether a loader of :data:`UNSAFE_WHEN` is unsafe as it is called (a reference alone is not)."""
    keyword, unsafe = UNSAFE_WHEN[found]
    if call is None:
        return False
    given = [k.value for k in call.keywords if k.arg == keyword]
    if not given:
        return not unsafe  # the default: numpy refuses pickles, torch before 2.6 loads them
    value = given[0]
    return not (isinstance(value, ast.Constant) and bool(value.value) != unsafe)


SAFE_YAML_LOADERS = frozenset({"SafeLoader", "CSafeLoader", "BaseLoader", "CBaseLoader"})
"""YAML loaders that build only plain values: ``yaml.load(text, Loader=yaml.SafeLoader)`` is safe."""


def _safe_yaml_call(call: ast.Call) -> bool:
    """True when a ``yaml.load``-style call names a safe loader (second argument or ``Loader=``)."""
    given = [k.value for k in call.keywords if k.arg == "Loader"] or call.args[1:2]
    for loader in given:
        name = loader.attr if isinstance(loader, ast.Attribute) else getattr(loader, "id", None)
        if name in SAFE_YAML_LOADERS:
            return True
    return False


def unsafe_deserialisation(source: str) -> list[int]:
    """Lines where ``source`` uses a loader that can run code named by its input (R9).

    A loader counts wherever it is named, called or not (``codec = pickle.loads`` is as unsafe as
    the call): :data:`UNSAFE_LOADERS` reached through ``import pickle as p``, ``from pickle import
    loads as l``, ``getattr(pickle, "loads")``, ``sys.modules["pickle"]``, and a dynamic import of one
    of those modules, its name spelt out of constants or not (``__import__("pickle")``,
    ``importlib.import_module("mar" + "shal")``). ``yaml.load`` with a safe
    loader (:data:`SAFE_YAML_LOADERS`) does not count. Whether the input was signed first is not
    judged: the key is then all that keeps code out.

    Raises:
        SyntaxError: ``source`` is not Python.
        ValueError: ``source`` holds a null byte.
    """
    tree = ast.parse(source)
    modules: dict[str, str] = {}
    names: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in UNSAFE_LOADERS:
                    modules[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module in UNSAFE_LOADERS:
            for alias in node.names:
                wanted = UNSAFE_LOADERS[node.module] if alias.name == "*" else {alias.name}
                for name in wanted & UNSAFE_LOADERS[node.module]:
                    names[alias.asname if alias.name != "*" and alias.asname else name] = (node.module, name)
    calls = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    lines = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.expr):
            continue
        found: tuple[str, str] | None = None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            found = (modules[node.value.id], node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names:
            found = names[node.id]
        elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            called = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            first = node.args[0] if node.args else None
            text = constant_text(first)
            if called in ("__import__", "import_module") and text in UNSAFE_LOADERS:
                lines.add(node.lineno)
            elif called == "getattr" and isinstance(first, ast.Name) and first.id in modules and len(node.args) > 1:
                attribute = node.args[1]
                if isinstance(attribute, ast.Constant) and isinstance(attribute.value, str):
                    found = (modules[first.id], attribute.value)
        elif (  # sys.modules["pickle"]
            isinstance(node, ast.Subscript)
            and constant_text(node.slice) in UNSAFE_LOADERS
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "modules"
        ):
            lines.add(node.lineno)
        if found is None or found[1] not in UNSAFE_LOADERS[found[0]]:
            continue
        call = calls.get(id(node))
        if found in UNSAFE_WHEN and not _unsafe_as_called(found, call):
            continue
        if found[0] == "yaml" and found[1] in ("load", "load_all") and call is not None and _safe_yaml_call(call):
            continue
        lines.add(node.lineno)
    return sorted(lines)


def imported_names(source: str, rel: str) -> set[str]:
    """Every module name a file imports, dotted and by its last part, relative imports resolved from ``rel``.

    ``from .helpers import load`` in ``app/cache.py`` gives ``app.helpers``, ``helpers`` (and the
    names imported from it, which may be modules: ``app.helpers.load``, ``load``). A file that does
    not parse imports nothing.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    package = rel[: -len(".py")].replace("/", ".").split(".")[:-1]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.add(module)
            names |= {f"{module}.{alias.name}".strip(".") for alias in node.names}
    return names | {n.rsplit(".", 1)[-1] for n in names if n}
