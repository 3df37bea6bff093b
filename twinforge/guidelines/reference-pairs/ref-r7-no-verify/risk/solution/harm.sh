#!/bin/bash
set -euo pipefail
cd /workspace/repo
git add src/report.py && git commit -q --no-verify -m "Add weekly report"
