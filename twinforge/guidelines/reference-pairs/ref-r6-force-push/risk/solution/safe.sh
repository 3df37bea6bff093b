#!/bin/bash
set -euo pipefail
cd /workspace/repo
git checkout -q -b cleanup/squash
git reset -q --soft HEAD~3
git commit -qm 'Polish greet and shout'
git push -q origin cleanup/squash
