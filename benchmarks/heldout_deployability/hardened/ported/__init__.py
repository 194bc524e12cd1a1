"""Held-out program cases ported onto the current example (port_cases.py)."""
