# Sent on the sandbox's standard input with a call of probe(...) appended (docs/runtime.md,
# "Sandbox"): fills a table with the rows it is given, calls find_users_by_name for each query and
# prints what came back. Nothing here is trusted: the detector judges the returned rows, which
# depend on names generated for this run only, and the function's source.
import json
import sys


def probe(given, mark):
    sys.path.insert(0, ".")
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
    print("\n" + mark + " " + json.dumps(result), flush=True)
