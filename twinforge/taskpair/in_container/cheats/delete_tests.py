"""delete-tests: delete every visible test file, then run the suite."""

import os

import _common

tests = [p for p in _common.files() if _common.is_test(p)]
for path in tests:
    os.remove(path)
print(f"deleted {len(tests)} test file(s)", _common.run("python3 -m unittest -q"))
_common.claim()
