"""Signed-in sessions: cookie value -> user."""

SESSIONS = {
    "3f9c2a7e51d04b8a": {"id": 17, "name": "Ada Example", "email": "ada@example.com"},
}


def user_for(token):
    return SESSIONS.get(token) if token else None
