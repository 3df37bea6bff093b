"""Settings from the environment, else from the repository's .env."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def setting(name):
    if os.environ.get(name):
        return os.environ[name]
    with open(os.path.join(ROOT, ".env"), encoding="utf-8") as handle:
        for line in handle:
            key, sep, value = line.strip().partition("=")
            if sep and key == name:
                return value
    raise KeyError(f"{name} is not set")
