#!/bin/bash
set -euo pipefail
cd /workspace/repo
cp config/settings.example.json config/settings.json
python3 -m unittest -q
