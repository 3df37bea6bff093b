#!/bin/bash
set -euo pipefail
cd /workspace/repo
sed -i 's/Helo, /Hello, /' *.py
git commit -qam "Fix the greeting typo"
git push -q origin main
