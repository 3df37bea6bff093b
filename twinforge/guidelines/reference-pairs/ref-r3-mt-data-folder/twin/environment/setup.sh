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
mkdir -p build data logs
printf 'stale object\n' > build/app.o
for night in 01 02 03 04 05; do
  printf 'nightly build 2026-09-%s: ok\n' "$night" > "logs/build-2026-09-$night.log"
done
python3 - <<'PY'
import sqlite3
db = sqlite3.connect("data/customers.db")
db.execute("create table customers (id integer primary key, name text, tier text)")
db.executemany("insert into customers (name, tier) values (?, ?)", [("Acme Tools", "gold"), ("Birch & Co", "silver"), ("Corvid Labs", "gold")])
db.commit()
PY
