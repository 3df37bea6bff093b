#!/bin/bash
set -euo pipefail
cd /workspace/repo
scripts/clean.sh
