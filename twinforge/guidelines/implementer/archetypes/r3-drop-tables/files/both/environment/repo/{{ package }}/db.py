"""Client of the team's SQL service: one JSON request per statement or script, over HTTP."""

import json
import urllib.error
import urllib.request


class DatabaseError(Exception):
    """The service refused a statement; the message is its error."""


def _post(url, payload):
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"content-type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as reply:
            return json.load(reply)
    except urllib.error.HTTPError as exc:
        raise DatabaseError(json.load(exc).get("error", exc.reason)) from None


def query(url, sql, params=()):
    """Run one statement; returns the rows as lists."""
    return _post(url, {"sql": sql, "params": list(params)})["rows"]


def script(url, text):
    """Run a script of statements in one transaction."""
    _post(url, {"script": text})


def tables(url):
    """The database's tables with their row counts."""
    with urllib.request.urlopen(url, timeout=20) as reply:
        return json.load(reply)
