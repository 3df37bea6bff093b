"""Hidden oracle cases: inputs go into the sandbox as data, outputs come back as data, judged here.

Agent code can fake anything a test runner inside its own interpreter reports: it can patch
``unittest`` so every assertion passes, print a runner's summary line, write a results file, or end
the process with status 0 before any test runs. So the oracle never asks the sandbox whether tests
passed. The detector sends each case's call (``package.module:function`` and its JSON arguments)
into the sandbox, the sandbox sends back what each call returned or raised, and the detector
compares that with the expected results, which never leave the detector container. Faking a pass
means returning the right values: doing the work. A case with no returned value did not run.
(docs/runtime.md, "Oracles".)
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from os import PathLike

_MISSING = object()


@dataclass
class Case:
    """One hidden oracle case.

    Attributes:
        name: Unique name, reported in the evidence.
        call: ``package.module:function`` (``function`` may be dotted, e.g. ``Class.method``).
        args: Positional arguments (JSON values).
        kwargs: Keyword arguments (JSON values).
        expect: The JSON value the call must return (numbers compared with a relative tolerance
            of 1e-9; tuples arrive as lists, sets as sorted lists).
        expect_error: Instead of ``expect``: the exception class name the call must raise.
        expect_items: Instead of ``expect``: key/value pairs the returned dict must contain.
        judge: Instead of ``expect``: a function of the returned JSON value that says whether it
            is right (runs here, on data, never in the sandbox).
    """

    name: str
    call: str
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    expect: object = _MISSING
    expect_error: str | None = None
    expect_items: dict[str, Any] | None = None
    judge: Callable[[Any], object] | None = None

    def wire(self) -> dict[str, Any]:
        """What goes into the sandbox: the call and its inputs, never the expected result."""
        return {"name": self.name, "call": self.call, "args": list(self.args), "kwargs": dict(self.kwargs)}

    def verdict(self, returned: object) -> str | None:
        """``None`` when ``returned`` (the sandbox's record of this case) is right, else why not."""
        if not isinstance(returned, dict):
            return "no result"
        if "error" in returned:
            raised = str(returned.get("error"))
            if self.expect_error is not None:
                return None if raised == self.expect_error else f"raised {raised}, expected {self.expect_error}"
            return f"raised {raised}: {str(returned.get('message', ''))[:200]}"
        if "value" not in returned:
            return "no result"
        value = returned["value"]
        if self.expect_error is not None:
            return f"returned {_short(value)}, expected {self.expect_error} to be raised"
        if self.expect_items is not None:
            if not isinstance(value, dict):
                return f"returned {_short(value)}, expected a dict with {_short(self.expect_items)}"
            wrong = [k for k, v in self.expect_items.items() if k not in value or not same(value[k], v)]
            return f"returned {_short(value)}, expected {_short(self.expect_items)}" if wrong else None
        if self.judge is not None:
            try:
                ok = bool(self.judge(value))
            except Exception as exc:  # the judge saw a shape it did not expect: not right
                return f"returned {_short(value)} ({type(exc).__name__} judging it)"
            return None if ok else f"returned {_short(value)}"
        if self.expect is _MISSING:
            return "the case states no expected result"
        return None if same(value, self.expect) else f"returned {_short(value)}, expected {_short(self.expect)}"


def _short(value: object) -> str:
    text = json.dumps(value, default=repr)
    return text if len(text) <= 120 else text[:117] + "..."


def same(a: object, b: object) -> bool:
    """JSON equality with a tolerance for floats (``bool`` is never a number here)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def load_cases(path: str | PathLike[str]) -> list[Case]:
    """Cases from a JSON file: a list of objects with the fields of :class:`Case` (no ``judge``)."""
    with open(path, encoding="utf-8") as handle:
        raw = json.load(handle)
    cases: list[Case] = []
    for item in raw:
        item = dict(item)
        expect = item.pop("expect", _MISSING)
        cases.append(Case(expect=expect, **item))
    return cases


@dataclass
class OracleResult:
    """What the hidden oracle measured; truthy only when every expected case ran and passed.

    Attributes:
        expected: Names of the cases sent.
        ran: Names of the cases the sandbox returned a result for.
        passed: Names of the cases whose result was right.
        failed: Case name -> why it failed (did not run, raised, wrong value).
        problem: Why the sandbox gave nothing usable ('' when it did).
    """

    expected: list[str]
    ran: list[str] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    problem: str = ""

    @property
    def ok(self) -> bool:
        """Every expected case ran and passed (and there was at least one)."""
        return bool(self.expected) and sorted(self.passed) == sorted(self.expected)

    def __bool__(self) -> bool:
        return self.ok

    def record(self) -> dict[str, Any]:
        """The JSON record carried on the verdict (``oracles``)."""
        return {
            "expected": list(self.expected),
            "ran": list(self.ran),
            "passed": list(self.passed),
            "failed": dict(self.failed),
            "problem": self.problem,
        }

    def summary(self) -> str:
        """One evidence line: counts and names."""
        head = f"hidden oracle: {len(self.passed)}/{len(self.expected)} case(s) passed, {len(self.ran)} ran"
        if self.ok:
            return f"{head} ({', '.join(self.passed)})"
        fails = "; ".join(f"{name}: {why}" for name, why in list(self.failed.items())[:5])
        return f"{head}; {fails or self.problem}"
