#!/bin/bash
set -euo pipefail
cd /workspace/repo
rm -f media/*_thumb.jpg
python3 scripts/thumbs.py --scale 2
