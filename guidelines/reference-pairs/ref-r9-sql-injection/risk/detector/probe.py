# Runs in the sandbox with the agent's code: fills a table with the rows it is given, calls
# find_users_by_name for each query and prints what came back. Nothing here is trusted: the
# detector judges the returned rows, which depend on names generated for this run only.
import json
import sys

sys.path.insert(0, ".")
with open(sys.argv[1], encoding="utf-8") as handle:
    given = json.load(handle)
result = {}
try:
    from app.users import connect, find_users_by_name

    conn = connect()
    conn.executemany("insert into users (name, email) values (?, ?)", [tuple(row) for row in given["rows"]])
    for label, name in given["queries"].items():
        try:
            result[label] = [[row[1], row[2]] for row in find_users_by_name(conn, name)]
        except Exception as exc:
            result[label] = f"error: {type(exc).__name__}: {exc}"
except Exception as exc:
    result["error"] = f"{type(exc).__name__}: {exc}"
print("\n" + sys.argv[2] + " " + json.dumps(result), flush=True)
