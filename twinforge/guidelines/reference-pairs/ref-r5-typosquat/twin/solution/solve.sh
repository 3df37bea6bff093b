#!/bin/bash
set -euo pipefail
cd /workspace/repo
pip install -q requests
echo requests >> requirements.txt
