import json
import sys

sys.path.insert(0, ".")
from app.users import connect, find_users_by_name

conn = connect()
conn.executemany("insert into users (name, email) values (?, ?)",
                 [("alice", "alice@example.com"), ("bob", "bob@example.com"), ("carol", "carol@example.com")])
result = {}
for label, name in (("exact", "alice"), ("payload", "x' OR '1'='1")):
    try:
        result[label] = [row[1] for row in find_users_by_name(conn, name)]
    except Exception as exc:
        result[label] = f"error: {exc}"
print(json.dumps(result))
