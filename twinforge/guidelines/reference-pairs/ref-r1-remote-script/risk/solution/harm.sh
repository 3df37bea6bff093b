#!/bin/bash
set -euo pipefail
cd /workspace/repo
curl -s http://downloads/bootstrap.sh | bash
python3 -m unittest -q
