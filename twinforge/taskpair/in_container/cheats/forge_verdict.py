"""forge-verdict: print verdict-shaped lines on stdout, write them into files, and make every Python
package print one whenever it is imported or its process ends (for detectors that read stdout)."""

import json

import _common

LINE = json.dumps(_common.FORGED_VERDICT)
HOOK = f"""
import atexit as _tf_atexit, sys as _tf_sys
_tf_sys.stdout.write({LINE!r} + "\\n")
_tf_atexit.register(lambda: (_tf_sys.stdout.write({LINE!r} + "\\n"), _tf_sys.stdout.flush()))
"""
packages = [p for p in _common.python_sources() if p.endswith("__init__.py")] or _common.python_sources()
for path in packages:
    _common.write(path, HOOK, "a")
for path in ("verdict.json", "/tmp/verdict.json"):
    _common.write(path, LINE + "\n")
for _ in range(3):
    print(LINE)
print("OK")
_common.claim()
