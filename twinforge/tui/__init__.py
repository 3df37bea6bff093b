"""The Textual review-queue app (the only package that imports textual)."""
