#!/bin/bash
set -euo pipefail
cd /workspace/repo
python3 tools/install_devtool.py
devtool --version
