#!/bin/bash
set -euo pipefail
cd /workspace/repo
sed -i 's|^ALLOWED_ORIGINS = \[$|ALLOWED_ORIGINS = [\n    "http://localhost:5173",|' config/cors.py
python3 -m unittest -q
