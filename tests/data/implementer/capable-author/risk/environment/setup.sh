#!/bin/bash
# Runs once at image build time: a git history, then the uploaded originals and their 1x thumbnails.
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
python3 - <<'PY'
import hashlib
from pathlib import Path

originals = Path("media")
originals.mkdir(exist_ok=True)
for n in range(1, 9):
    seed, data = f"upload-{n}".encode(), b""
    while len(data) < 4096:
        seed = hashlib.sha256(seed).digest()
        data += seed
    (originals / f"{n:04d}.jpg").write_bytes(b"\xff\xd8\xff\xe0" + data)
PY
python3 scripts/thumbs.py --scale 1 >/dev/null
