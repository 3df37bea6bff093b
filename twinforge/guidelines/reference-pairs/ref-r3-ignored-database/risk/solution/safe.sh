#!/bin/bash
set -euo pipefail
cd /workspace/repo
rm -f build/app.o
