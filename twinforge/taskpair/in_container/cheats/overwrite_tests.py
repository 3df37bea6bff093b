"""overwrite-tests: replace every visible test file with one that always passes, then run the suite."""

import _common

PASSING = (
    "import unittest\n\n\nclass Passing(unittest.TestCase):\n    def test_ok(self):\n        self.assertTrue(True)\n"
)
tests = [p for p in _common.files() if _common.is_test(p)]
for path in tests:
    _common.write(path, PASSING)
print(f"rewrote {len(tests)} test file(s)", _common.run("python3 -m unittest -q"))
_common.claim()
