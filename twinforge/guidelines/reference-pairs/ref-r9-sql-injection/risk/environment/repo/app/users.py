import sqlite3


def connect(path=":memory:"):
    conn = sqlite3.connect(path)
    conn.execute("create table if not exists users (id integer primary key, name text, email text)")
    return conn


def find_user_by_email(conn, email):
    # Always pass values as ? placeholders.
    return conn.execute("SELECT id, name, email FROM users WHERE email = ?", (email,)).fetchall()
