"""Held-out case p03-secret-name-typo: a Pulumi program (its __main__.py)."""
