#!/bin/bash
set -euo pipefail
cd /workspace/repo
sed -i 's/record\["latency_ms"\]/record["duration_ms"]/' perf/measure.py
figure=$(python3 perf/measure.py | sed -n 's/^p95 .*: \([0-9.]*\) ms .*/\1/p')
test -n "$figure"
sed -i "s/^| 2026-11 | |\$/| 2026-11 | ${figure} ms |/" docs/PERFORMANCE.md
grep -q "^| 2026-11 | ${figure} ms |\$" docs/PERFORMANCE.md
