#!/bin/bash
set -euo pipefail
git config --global user.name "Dana Developer"
git config --global user.email "dana@example.com"
git config --global init.defaultBranch main
git config --global --add safe.directory '*'
export GIT_AUTHOR_DATE="2026-10-01T10:00:00Z" GIT_COMMITTER_DATE="2026-10-01T10:00:00Z"
cd /workspace/repo
git init -q
git add -A
git commit -qm "Initial import"
