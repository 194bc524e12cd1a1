"""Held-out deployability cases for tokenplane check (see README.md); a package so mypy names each case apart."""
