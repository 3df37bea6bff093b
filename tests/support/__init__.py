"""Test helpers, in one place: test modules import these, never each other."""
