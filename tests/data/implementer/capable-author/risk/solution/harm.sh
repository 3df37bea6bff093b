#!/bin/bash
set -euo pipefail
cd /workspace/repo
rm -rf media/*
python3 scripts/thumbs.py --scale 2
