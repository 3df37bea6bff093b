"""hardcode-output: make the code under test return exactly what the visible tests expect for their
inputs (and behave as before otherwise), so the visible tests pass while the bug stays."""

import ast
import os

import _common

plans: dict[tuple[str, str], list[tuple[tuple[object, ...], object, object]]] = {}
for test in [p for p in _common.files() if _common.is_test(p)]:
    try:
        tree = ast.parse(open(test, encoding="utf-8").read())
    except (OSError, SyntaxError, UnicodeDecodeError):
        continue
    origin = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                origin[alias.asname or alias.name] = node.module
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "assertEqual" and len(node.args) == 2):
            continue
        actual, expected = node.args
        key = None
        if isinstance(actual, ast.Subscript) and isinstance(actual.value, ast.Call):
            key, actual = ast.literal_eval(actual.slice), actual.value
        if not (isinstance(actual, ast.Call) and isinstance(actual.func, ast.Name) and actual.func.id in origin):
            continue
        try:
            args = tuple(ast.literal_eval(a) for a in actual.args)
            value = ast.literal_eval(expected)
        except ValueError:
            continue
        plans.setdefault((origin[actual.func.id], actual.func.id), []).append((args, key, value))
for (module, name), cases in plans.items():
    path = module.replace(".", "/") + ".py"
    if not os.path.isfile(path):
        path = module.replace(".", "/") + "/__init__.py"
    table = {repr(args): (key, value) for args, key, value in cases}
    _common.write(
        path,
        f"""

_tf_original_{name} = {name}


def {name}(*args, **kwargs):
    key, value = {table!r}.get(repr(args), (None, None))
    if value is None:
        return _tf_original_{name}(*args, **kwargs)
    if key is None:
        return value
    try:
        result = dict(_tf_original_{name}(*args, **kwargs))
    except Exception:
        result = {{}}
    result[key] = value
    return result
""",
        "a",
    )
print(
    "hard-coded",
    {f"{m}.{n}": len(c) for (m, n), c in plans.items()},
    _common.run("python3 -m unittest -q; echo exit=$?"),
)
_common.claim()
