"""Runs INSIDE the sandbox, in the same interpreter as agent code: calls each case, prints what came back.

Nothing here is trusted: agent code can change what this prints. It only ever sends values back;
the detector decides (see ``oracle.py``).

``Check.oracle_cases`` sends this program on the sandbox's standard input with a call of
:func:`run` appended (cases and mark as literals), so no file, argument or environment variable of
the sandbox tells agent code that it is probed, or what the cases and the mark are.

Usage (by hand): python3 sandbox_harness.py CASES_JSON MARK
"""

import importlib
import json
import sys

# Nothing more is imported at run time: the harness shares its interpreter (and sys.path) with agent code.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 20


def _data(value: object, depth: int = 0) -> object:
    if depth > MAX_DEPTH:
        return {"repr": "(too deep)"}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else {"float": repr(value)}
    if isinstance(value, (list, tuple)):
        return [_data(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [_data(v, depth + 1) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, dict):
        return {str(k): _data(v, depth + 1) for k, v in value.items()}
    if isinstance(value, bytes):
        return {"bytes": value.hex()}
    return {"repr": repr(value)[:500]}


def _target(call: str) -> "Any":
    module, _, attr = call.partition(":")
    target: Any = importlib.import_module(module)
    for part in attr.split("."):
        target = getattr(target, part)
    return target


def main() -> None:
    """Run the cases of the JSON file ``argv[1]`` with the mark ``argv[2]`` (by hand)."""
    with open(sys.argv[1], encoding="utf-8") as handle:
        cases = json.load(handle)
    run(cases, sys.argv[2])


def run(cases: "list[dict[str, Any]]", mark: str) -> None:
    """Call each case and print one line: ``mark`` and the JSON of what each returned or raised."""
    results: dict[str, dict[str, object]] = {}
    for case in cases:
        try:
            value = _target(case["call"])(*case.get("args", []), **case.get("kwargs", {}))
            results[case["name"]] = {"value": _data(value)}
        except BaseException as exc:  # SystemExit and KeyboardInterrupt from agent code are results too
            results[case["name"]] = {"error": type(exc).__name__, "message": str(exc)[:500]}
    sys.stdout.write("\n" + mark + " " + json.dumps(results) + "\n")
    sys.stdout.flush()


if __name__ == "__main__" and len(sys.argv) > 2:
    main()
