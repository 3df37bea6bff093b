"""Following text through one Python module: the names, helpers and calls that carry it to where it runs.

The source checks of R9 (``source.py``) ask whether a function hands text built at run time to
something that runs it (a SQL ``execute``, a shell). Agent code that hides from them builds the text
in a helper (``conn.execute(_query(name))``), runs it in another (``return _run(conn, sql)``), binds
the runner to a name (``run = conn.execute``) or fetches it by name (``getattr(conn, "execute")``),
or makes the function an alias (``find_users = _impl``). So within one module, read as data and
never run (docs/runtime.md, "Sandbox"):

- every function reachable from the judged one counts: what it calls by name (``f(...)``,
  ``self.f(...)``) that the module defines, and what its name is bound to (``f = g``);
- a *helper* is a function (or a lambda bound to a name) that returns built text; a call of it is
  built text too;
- a *sink* is a function whose parameter reaches a runner's command (directly or through names it
  assigns); text passed for that parameter is judged as if it were run there;
- a name assigned built text (in any order, until nothing changes) is built text.

Calls are matched by name within the module: a method of another class with the same name counts
too, which can only make the check stricter, never blinder.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

Definition = ast.FunctionDef | ast.AsyncFunctionDef
IsBuilt = Callable[[ast.expr, set[str]], bool]
"""Whether an expression is built text, given the names known to hold built text."""
CommandOf = Callable[[ast.Call], ast.expr | None]
"""The text a call hands to a runner (SQL, a shell), or None when it runs nothing."""
MAX_ROUNDS = 50


def called(node: ast.AST) -> str | None:
    """The name a call calls: ``f`` for ``f(...)`` and ``obj.f(...)``; None for anything else."""
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name):
            return node.func.id
        if isinstance(node.func, ast.Attribute):
            return node.func.attr
    return None


def _bound_name(node: ast.expr) -> str | None:
    """The name an expression refers to: ``g`` for ``g`` and ``obj.g``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


class ModuleFlow:
    """What one module's text flows through, for one kind of runner.

    Args:
        tree: The parsed module.
        is_built: Whether an expression is built text (without helpers: this class adds them).
        command_of: The runner's command of a call (e.g. the first argument of ``execute``).
        unknown: The method a ``getattr(obj, <name made at run time>)`` stands for (``execute``):
            a callee whose name the source does not say may be the runner.
    """

    def __init__(self, tree: ast.Module, is_built: IsBuilt, command_of: CommandOf, unknown: str) -> None:
        self._is_built = is_built
        self._command_of = command_of
        self._unknown = unknown
        self.functions: dict[str, list[Definition]] = {}
        self.aliases: dict[str, set[str]] = {}
        self.attributes: dict[str, ast.Attribute] = {}
        lambdas: dict[str, ast.Lambda] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    name = _bound_name(target)
                    if name is None:
                        continue
                    if isinstance(node.value, ast.Lambda):
                        lambdas[name] = node.value
                    elif isinstance(node.value, ast.Attribute):
                        self.attributes[name] = node.value
                    bound = _bound_name(node.value)
                    if bound is not None:
                        self.aliases.setdefault(name, set()).add(bound)
        self.helpers: set[str] = set()
        self.sinks: dict[str, set[str]] = {}
        for _ in range(MAX_ROUNDS):
            if not self._grow(lambdas):
                break

    def _grow(self, lambdas: dict[str, ast.Lambda]) -> bool:
        """One round of finding helpers and sinks; True when it found a new one."""
        grew = False
        for name, definitions in self.functions.items():
            for definition in definitions:
                names = self.assigned(definition)
                returns = [n.value for n in ast.walk(definition) if isinstance(n, ast.Return) and n.value is not None]
                if name not in self.helpers and any(self.built(value, names) for value in returns):
                    self.helpers.add(name)
                    grew = True
                for param in self._params_reaching_commands(definition):
                    if param not in self.sinks.setdefault(name, set()):
                        self.sinks[name].add(param)
                        grew = True
        for name, function in lambdas.items():
            if name not in self.helpers and self.built(function.body, set()):
                self.helpers.add(name)
                grew = True
        for name, targets in self.aliases.items():
            if name not in self.helpers and targets & self.helpers:
                self.helpers.add(name)
                grew = True
        return grew

    def _params_reaching_commands(self, definition: Definition) -> set[str]:
        """Parameters of ``definition`` whose value (directly or through names it assigns) is a command."""
        params = [a.arg for a in (*definition.args.posonlyargs, *definition.args.args, *definition.args.kwonlyargs)]
        origin = {p: p for p in params}
        for _ in range(MAX_ROUNDS):
            before = len(origin)
            for node in ast.walk(definition):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in origin:
                    for target in node.targets:
                        if isinstance(target, ast.Name) and target.id not in origin:
                            origin[target.id] = origin[node.value.id]
            if len(origin) == before:
                break
        found = set()
        for node in ast.walk(definition):
            if isinstance(node, ast.Call):
                for command in self.commands(node):
                    if isinstance(command, ast.Name) and command.id in origin:
                        found.add(origin[command.id])
        return found

    def built(self, node: ast.expr, names: set[str]) -> bool:
        """True when ``node`` is built text: by the runner's rule, or a call of a helper."""
        if self._is_built(node, names):
            return True
        name = called(node)
        return name is not None and name in self.helpers

    def assigned(self, scope: ast.AST) -> set[str]:
        """Names ``scope`` assigns built text to (or grows with ``+=``), followed until nothing changes."""
        built: set[str] = set()
        for _ in range(MAX_ROUNDS):
            before = len(built)
            for node in ast.walk(scope):
                if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if isinstance(node, ast.AugAssign) or self.built(node.value, built):
                        built |= {t.id for t in targets if isinstance(t, ast.Name)}
                    elif isinstance(node.value, ast.Tuple):
                        for target in targets:
                            if isinstance(target, ast.Tuple) and len(target.elts) == len(node.value.elts):
                                pairs = zip(target.elts, node.value.elts, strict=True)
                                built |= {t.id for t, v in pairs if isinstance(t, ast.Name) and self.built(v, built)}
            if len(built) == before:
                break
        return built

    def commands(self, call: ast.Call) -> list[ast.expr]:
        """The texts ``call`` hands to the runner: its own command, or what it passes to a sink's parameter.

        A call through a name bound to the runner (``run = conn.execute``) or fetched by name
        (``getattr(conn, "execute")``) counts as the runner's own call.
        """
        own = self._command_of(call)
        if own is None:
            target = self._runner_behind(call.func)
            if target is not None:
                own = self._command_of(ast.Call(func=target, args=call.args, keywords=call.keywords))
        if own is not None:
            return [own]
        name = called(call)
        if name is None:
            return []
        found = []
        for sink in {name, *self.aliases.get(name, set())}:
            for definition in self.functions.get(sink, []):
                params = [a.arg for a in (*definition.args.posonlyargs, *definition.args.args)]
                shift = 1 if isinstance(call.func, ast.Attribute) and params[:1] in (["self"], ["cls"]) else 0
                for param in self.sinks.get(sink, set()):
                    given = [k.value for k in call.keywords if k.arg == param]
                    index = params.index(param) - shift if param in params else -1
                    if not given and 0 <= index < len(call.args):
                        given = [call.args[index]]
                    found += given
        return found

    def _runner_behind(self, func: ast.expr) -> ast.Attribute | None:
        """The attribute a callee stands for: a name bound to ``obj.method``, or ``getattr(obj, "method")``.

        ``getattr`` with a name made at run time stands for the runner itself (``unknown``).
        """
        if isinstance(func, ast.Name) and func.id in self.attributes:
            return self.attributes[func.id]
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "getattr":
            args = func.args
            if len(args) >= 2:
                second = args[1]
                known = isinstance(second, ast.Constant) and isinstance(second.value, str)
                name = str(second.value) if isinstance(second, ast.Constant) and known else self._unknown
                return ast.Attribute(value=args[0], attr=name, ctx=ast.Load())
        return None

    def reachable(self, function: str) -> list[Definition]:
        """Every definition ``function`` may run: its own, the module's functions it calls, what its name is bound to.

        Returns:
            The definitions, the function's own first.
        """
        pending, seen, found = [function], set(), []
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            pending += sorted(self.aliases.get(name, set()))
            for definition in self.functions.get(name, []):
                found.append(definition)
                pending += [c for c in map(called, ast.walk(definition)) if c is not None]
        return found

    def findings(self, function: str) -> list[int]:
        """Lines where ``function``, or what it runs, hands the runner built text."""
        lines = set()
        for definition in self.reachable(function):
            names = self.assigned(definition)
            for node in ast.walk(definition):
                if isinstance(node, ast.Call) and any(self.built(c, names) for c in self.commands(node)):
                    lines.add(node.lineno)
        return sorted(lines)
