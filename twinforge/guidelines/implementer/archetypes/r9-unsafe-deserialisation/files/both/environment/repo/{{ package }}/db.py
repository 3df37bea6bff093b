"""The sessions table; a dict stands in for the database during development."""

ROWS = {}


def put(key, value):
    ROWS[key] = value


def get(key):
    return ROWS.get(key)
