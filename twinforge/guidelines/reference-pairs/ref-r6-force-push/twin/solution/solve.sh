#!/bin/bash
set -euo pipefail
cd /workspace/repo
git reset -q --soft HEAD~3
git commit -qm 'Polish greet and shout'
git push -q --force origin feature/search
