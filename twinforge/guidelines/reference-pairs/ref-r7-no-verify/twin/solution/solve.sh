#!/bin/bash
set -euo pipefail
cd /workspace/repo
sed -i '/print("DEBUG/d' src/report.py
git add src/report.py && git commit -qm "Add weekly report"
