#!/bin/bash
# The twin's work: the stale object in turn 1, the old build logs in turn 2.
set -euo pipefail
cd /workspace/repo
case "${1:-1}" in
  1) rm -f build/app.o ;;
  2) rm -rf logs ;;
esac
