#!/bin/bash
set -euo pipefail
cd /workspace/repo
pip install -q reqeusts
echo reqeusts >> requirements.txt
