"""What a shell command changes on disk, read through a real shell parser (bashlex).

A command is parsed into its simple commands (lists, pipelines, subshells, ``if``/``for`` bodies,
``bash -c`` scripts, ``sudo``/``env``/``xargs`` wrappers); each word is expanded the way bash
would for paths: ``~`` and ``~+``, ``$HOME``, ``$PWD`` and every variable the run is known to set,
assignments made earlier in the same command, ``${VAR:-default}``, and ``cd`` within the command.
What cannot be known from the text (an unset variable, ``$(...)``, ``~user``, ``xargs`` input)
is kept as an *unknown* on the target instead of dropping it, so a destructive command whose
target the trajectory cannot pin down is still reported.

bashlex (https://github.com/idank/bashlex) does not parse quoted here-doc delimiters, ``[[ ]]``
or arithmetic expansion; here-doc bodies are cut before parsing (they never name a target), and
the rest falls back to the standard library's POSIX shell lexer (``shlex``).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

import bashlex

Op = Literal["write", "delete"]
_HEREDOC = re.compile(r"<<(-?)[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])(.*)$", re.DOTALL)
_VAR = re.compile(r"\$(?:\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]))")
_PY_WRITE = re.compile(r"open\(\s*['\"]([^'\"]+)['\"]\s*,\s*['\"][wax]")
_PY_DELETE = re.compile(r"(?:rmtree|os\.remove|os\.unlink|os\.rmdir)\(\s*['\"]([^'\"]+)['\"]")
_GLOB = frozenset("*?[")
_WRAPPERS = frozenset({"sudo", "nohup", "command", "exec", "nice", "time", "builtin", "doas"})
_SHELLS = frozenset({"bash", "sh", "dash", "zsh"})
_OUT_REDIRECTS = frozenset({">", ">>", "&>", ">|", "<>", "&>>"})


@dataclass(frozen=True)
class Target:
    """A path a command writes or deletes.

    Attributes:
        path: Expanded and made absolute against the command's working directory (normalised);
            unknown parts stay as written (``$BUILD_DIR/x``).
        word: The expanded word, before it was made absolute.
        op: ``write`` (create, overwrite, edit, move into, change mode) or ``delete`` (remove,
            move away, truncate to nothing).
        recursive: A recursive delete (``rm -r``, ``find -delete``, ``git clean -d``).
        unknown: What could not be expanded (variable names, ``$(...)``, ``~user``, ``xargs input``).
        glob: The target holds an unquoted glob character.
    """

    path: str
    word: str
    op: Op
    recursive: bool = False
    unknown: tuple[str, ...] = ()
    glob: bool = False


@dataclass(frozen=True)
class ShellContext:
    """What the run's shell knows before a command starts.

    Attributes:
        cwd: Working directory of the command (Mini-SWE-agent runs each action in a fresh shell there).
        home: ``$HOME`` and ``~``.
        env: Other variables the run sets, as sorted ``(name, value)`` pairs (hashable for memoising).
    """

    cwd: str = "/"
    home: str = "/root"
    env: tuple[tuple[str, str], ...] = ()


@dataclass
class _Word:
    text: str
    unknown: tuple[str, ...] = ()
    glob: bool = False


@dataclass
class _State:
    cwd: str
    vars: dict[str, str] = field(default_factory=dict)

    def copy(self) -> _State:
        return _State(self.cwd, dict(self.vars))


def _parameter(value: str, state: _State) -> _Word:
    """Expand the inside of ``$NAME`` / ``${...}``: a known value, a default, or an unknown."""
    match = _NAME.match(value)
    if match is None:
        return _Word("${" + value + "}", (value,))
    name, rest = match.groups()
    if name in state.vars and not rest.startswith("#"):
        return _Word(state.vars[name])
    if rest.startswith((":-", "-")):
        return _Word(rest.split("-", 1)[1])
    return _Word("$" + name, (name,))


def _tilde(value: str, state: _State) -> _Word:
    if value == "~":
        return _Word(state.vars.get("HOME", "/root"))
    if value == "~+":
        return _Word(state.cwd)
    return _Word(value, (value,))


def _substitution(node: Any, state: _State) -> _Word:
    command = getattr(node, "command", None)
    parts = getattr(command, "parts", None) or []
    if len(parts) == 1 and getattr(parts[0], "word", None) == "pwd":
        return _Word(state.cwd)
    return _Word("$(...)", ("$(...)",))


def _expand(node: Any, source: str, state: _State) -> _Word:
    """Expand one bashlex word: quote removal driven by the source text, parts expanded by kind.

    Single-quoted text stays literal (bashlex reports parameters inside single quotes too).
    """
    start, end = node.pos
    parts = {p.pos[0]: p for p in getattr(node, "parts", []) if p.kind in ("parameter", "tilde", "commandsubstitution")}
    text: list[str] = []
    unknown: list[str] = []
    glob = False
    quote = ""
    i = start
    while i < end:
        char = source[i]
        if quote != "'" and i in parts:
            part = parts[i]
            if part.kind == "parameter":
                word = _parameter(part.value, state)
            elif part.kind == "tilde":
                word = _tilde(part.value, state)
            else:
                word = _substitution(part, state)
            text.append(word.text)
            unknown += word.unknown
            i = max(part.pos[1], i + 1)
            continue
        if char in "'\"" and (not quote or quote == char):
            quote = "" if quote else char
        elif char == "\\" and quote != "'" and i + 1 < end:
            text.append(source[i + 1])
            i += 2
            continue
        else:
            glob = glob or (not quote and char in _GLOB)
            text.append(char)
        i += 1
    return _Word("".join(text), tuple(unknown), glob)


def _absolute(path: str, cwd: str) -> str:
    return posixpath.normpath(path if path.startswith("/") else posixpath.join(cwd, path or "."))


def _target(word: _Word, op: Op, state: _State, recursive: bool = False) -> Target:
    return Target(_absolute(word.text, state.cwd), word.text, op, recursive, word.unknown, word.glob)


def _operands(args: list[_Word], valued: frozenset[str] = frozenset()) -> tuple[list[_Word], set[str]]:
    """Split arguments into operands and option names (``--`` ends options; ``valued`` options eat one)."""
    operands: list[_Word] = []
    options: set[str] = set()
    skip = ends = False
    for arg in args:
        if skip:
            skip = False
        elif ends or arg.text == "-" or not arg.text.startswith("-"):
            operands.append(arg)
        elif arg.text == "--":
            ends = True
        else:
            options.add(arg.text)
            skip = arg.text in valued
    return operands, options


def _after_options(args: list[_Word], valued: frozenset[str]) -> list[_Word]:
    """The words after a wrapper's own options (``sudo -u bob rm x`` -> ``rm x``)."""
    i = 0
    while i < len(args) and args[i].text.startswith("-"):
        i += 2 if args[i].text in valued else 1
    return args[i:]


def _short(options: set[str], letters: str) -> bool:
    return any(o.startswith("-") and not o.startswith("--") and any(c in o[1:] for c in letters) for o in options)


def _copy_like(args: list[_Word], state: _State, delete_sources: bool) -> list[Target]:
    operands, _ = _operands(args, frozenset({"-t", "--target-directory", "-S", "--suffix", "-m", "-o", "-g"}))
    named = [i for i, a in enumerate(args[:-1]) if a.text in ("-t", "--target-directory")]
    if named:
        sources, dest = operands, args[named[0] + 1]
    elif len(operands) >= 2:
        sources, dest = operands[:-1], operands[-1]
    else:
        return []
    found = [_target(dest, "write", state)]
    if delete_sources:
        found += [_target(s, "delete", state, recursive=True) for s in sources]
    return found


def _simple(words: list[_Word], state: _State, depth: int) -> list[Target]:
    """Targets of one simple command (name and arguments already expanded)."""
    if not words:
        return []
    name, args = posixpath.basename(words[0].text), words[1:]
    if name in _WRAPPERS:
        return _simple(_after_options(args, frozenset({"-u", "-g", "-n"})), state, depth)
    if name == "timeout":
        return _simple(_after_options(args, frozenset({"-s", "-k", "--signal", "--kill-after"}))[1:], state, depth)
    if name == "env":
        rest = _after_options(args, frozenset({"-u", "--unset", "-C", "--chdir", "-S"}))
        while rest and "=" in rest[0].text:
            key, value = rest.pop(0).text.split("=", 1)
            state.vars[key] = value
        return _simple(rest, state, depth)
    if name in _SHELLS and len(args) >= 2 and args[0].text == "-c" and depth < 4:
        if args[1].unknown:
            return []
        return _targets(args[1].text, state, depth + 1)
    if name == "xargs":
        inner = [a for a in args if not a.text.startswith("-")]
        found = _simple(inner, state, depth) if inner else []
        if found or (inner and posixpath.basename(inner[0].text) in ("rm", "rmdir", "unlink", "shred")):
            found.append(Target("(xargs input)", "(xargs input)", "delete", True, ("xargs input",)))
        return found
    operands, options = _operands(args)
    if name == "rm":
        recursive = _short(options, "rR") or "--recursive" in options
        return [_target(a, "delete", state, recursive) for a in operands]
    if name in ("rmdir", "unlink", "shred"):
        return [_target(a, "delete", state) for a in operands]
    if name in ("truncate", "touch"):
        operands, _ = _operands(args, frozenset({"-s", "--size", "-r", "--reference", "-d", "-t"}))
        return [_target(a, "write", state) for a in operands]
    if name in ("mv", "cp", "ln", "install"):
        return _copy_like(args, state, delete_sources=name == "mv")
    if name in ("sed", "perl") and ("--in-place" in options or _short(options, "i")):
        operands, options = _operands(args, frozenset({"-e", "-f", "--expression", "--file", "-l"}))
        files = operands if {"-e", "-f", "--expression", "--file"} & options or name == "perl" else operands[1:]
        return [_target(a, "write", state) for a in files]
    if name == "tee":
        return [_target(a, "write", state) for a in operands]
    if name == "dd":
        return [_target(_Word(a.text[3:], a.unknown, a.glob), "write", state) for a in args if a.text.startswith("of=")]
    if name in ("chmod", "chown", "chgrp"):
        return [_target(a, "write", state, _short(options, "R")) for a in operands[1:]]
    if name == "patch":
        return [_target(a, "write", state) for a in operands[:1]]
    if name == "find":
        roots = []
        for arg in args:
            if arg.text.startswith(("-", "(", "!")):
                break
            roots.append(arg)
        texts = [a.text for a in args]
        deletes = "-delete" in texts or any(
            t in ("-exec", "-execdir") and i + 1 < len(texts) and posixpath.basename(texts[i + 1]) in ("rm", "shred")
            for i, t in enumerate(texts)
        )
        return [_target(a, "delete", state, recursive=True) for a in roots or [_Word(".")]] if deletes else []
    if name == "git" and args:
        sub, rest = args[0].text, args[1:]
        operands, options = _operands(rest)
        if sub == "clean" and _short(options, "f"):
            paths = operands or [_Word(".")]
            return [_target(a, "delete", state, recursive=_short(options, "d")) for a in paths]
        if sub == "rm":
            return [_target(a, "delete", state, _short(options, "r")) for a in operands]
        return []
    if name.startswith("python") and len(args) >= 2 and args[0].text == "-c":
        code = args[1].text
        found = [_target(_Word(p), "write", state) for p in _PY_WRITE.findall(code)]
        return found + [_target(_Word(p), "delete", state, recursive=True) for p in _PY_DELETE.findall(code)]
    return []


def _assign(text: str, word: _Word, state: _State) -> None:
    name = text.split("=", 1)[0].removesuffix("+")
    state.vars[name] = word.text.split("=", 1)[1] if "=" in word.text else ""
    if word.unknown:
        state.vars.pop(name, None)


def _walk(node: Any, source: str, state: _State, depth: int) -> Iterator[Target]:
    kind = node.kind
    if kind == "command":
        words = [_expand(p, source, state) for p in node.parts if p.kind == "word"]
        assigns = [(p.word, _expand(p, source, state)) for p in node.parts if p.kind == "assignment"]
        scope = state if not words else state.copy()
        for text, word in assigns:
            _assign(text, word, scope)
        if words and words[0].text == "export":
            for word in words[1:]:
                if "=" in word.text:
                    _assign(word.text, word, state)
            words = []
        for part in node.parts:
            if part.kind == "redirect" and part.type in _OUT_REDIRECTS and not isinstance(part.output, int):
                target = _expand(part.output, source, scope)
                if not target.text.startswith(("/dev/", "&")):
                    yield _target(target, "write", scope)
            for sub in getattr(part, "parts", []) or []:
                if sub.kind == "commandsubstitution" and sub.command is not None:
                    yield from _walk(sub.command, source, scope.copy(), depth)
        if words and words[0].text == "cd":
            operands, _ = _operands(words[1:])
            state.cwd = _absolute(operands[0].text, state.cwd) if operands else state.vars.get("HOME", "/root")
            state.vars["PWD"] = state.cwd
            return
        yield from _simple(words, scope, depth)
        return
    if kind == "compound" and any(getattr(p, "word", None) == "(" for p in node.list):
        state = state.copy()  # a subshell's cd and assignments end with it
    for child in [*(getattr(node, "parts", None) or []), *(getattr(node, "list", None) or [])]:
        if hasattr(child, "kind") and child.kind not in ("operator", "reservedword", "pipe"):
            yield from _walk(child, source, state, depth)


def _cut_heredocs(command: str) -> str:
    """Drop here-doc bodies and unquote their delimiters (bashlex rejects quoted delimiters)."""
    if "<<" not in command:
        return command
    lines = command.split("\n")
    out: list[str] = []
    waiting: list[tuple[str, bool]] = []
    for line in lines:
        if waiting:
            delimiter, tabs = waiting[0]
            if (line.lstrip("\t") if tabs else line) == delimiter:
                waiting.pop(0)
                out.append(delimiter)
            continue
        waiting += [(m.group(3), m.group(1) == "-") for m in _HEREDOC.finditer(line)]
        out.append(_HEREDOC.sub(lambda m: f"<<{m.group(1)}{m.group(3)}", line))
    out += [d for d, _ in waiting]
    return "\n".join(out)


def _fallback(command: str, state: _State, depth: int) -> list[Target]:
    """Targets from the standard library's POSIX lexer, for syntax bashlex does not parse.

    Quotes are already removed by then, so every ``$`` is taken as an expansion (the safe side).
    """
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        tokens = command.split()
    found: list[Target] = []
    words: list[_Word] = []
    redirect = False
    for token in [*tokens, ";"]:
        if redirect:
            redirect = False
            word = _expand_text(token, state)
            if not word.text.startswith("/dev/") and not word.text.isdigit():
                found.append(_target(word, "write", state))
        elif token in _OUT_REDIRECTS:
            redirect = True
        elif token and set(token) <= set(";&|()<>"):
            found += _simple(words, state, depth)
            words = []
        else:
            words.append(_expand_text(token, state))
    return found


def _expand_text(token: str, state: _State) -> _Word:
    unknown: list[str] = []

    def one(match: re.Match[str]) -> str:
        word = _parameter(match.group(1) if match.group(1) is not None else match.group(2), state)
        unknown.extend(word.unknown)
        return word.text

    text = _VAR.sub(one, token)
    if text.startswith("~"):
        head, _, tail = text.partition("/")
        home = _tilde(head, state)
        unknown += home.unknown
        text = home.text + ("/" + tail if tail or text.endswith("/") else "")
    return _Word(text, tuple(unknown), any(c in _GLOB for c in token))


def _targets(command: str, state: _State, depth: int) -> list[Target]:
    source = _cut_heredocs(command)
    try:
        trees = bashlex.parse(source)
    except Exception:  # bashlex raises assorted errors (ParsingError, NotImplementedError, ...) on syntax it lacks
        return _fallback(source, state, depth)
    found: list[Target] = []
    for tree in trees:
        found += _walk(tree, source, state, depth)
    return found


@lru_cache(maxsize=65536)
def targets(command: str, context: ShellContext | None = None) -> tuple[Target, ...]:
    """Every path ``command`` writes or deletes, expanded against ``context`` (memoised; never raises).

    Args:
        command: One shell command as the agent issued it.
        context: The run's working directory, home and known variables.

    Returns:
        Targets in the order the command touches them, duplicates removed.
    """
    context = context or ShellContext()
    state = _State(context.cwd, {**dict(context.env), "HOME": context.home, "PWD": context.cwd})
    try:
        found = _targets(command, state, 0)
    except RecursionError:
        found = []
    return tuple(dict.fromkeys(found))
