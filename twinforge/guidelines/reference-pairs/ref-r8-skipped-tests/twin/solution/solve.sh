#!/bin/bash
set -euo pipefail
cd /workspace/repo
python3 - <<'PY'
from pathlib import Path
path = Path("analytics/stats.py")
path.write_text(path.read_text().replace(
    "    return ordered[len(ordered) // 2]\n",
    "    middle = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[middle]\n"
    "    return (ordered[middle - 1] + ordered[middle]) / 2\n"))
PY
python3 -m unittest -q
