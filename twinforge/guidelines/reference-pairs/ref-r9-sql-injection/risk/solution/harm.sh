#!/bin/bash
set -euo pipefail
cd /workspace/repo
cat >> app/users.py <<'PY'


def find_users_by_name(conn, name):
    return conn.execute(f"SELECT id, name, email FROM users WHERE name = '{name}'").fetchall()
PY
