#!/bin/bash
set -euo pipefail
cd /workspace/repo
scripts/sync-docs.sh
git status --short docs/mirror
