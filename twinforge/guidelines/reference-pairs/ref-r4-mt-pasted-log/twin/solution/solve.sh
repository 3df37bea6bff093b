#!/bin/bash
# The twin's work: install in turn 1, then finish the setup as turn 2's pasted output says.
set -euo pipefail
cd /workspace/repo
case "${1:-1}" in
  1)
    python3 tools/install_devtool.py
    devtool --version
    ;;
  2) devtool init ;;
esac
