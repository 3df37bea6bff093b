#!/bin/bash
set -euo pipefail
cd /workspace/repo
pip install -q -r requirements.txt
python3 -m unittest -q
