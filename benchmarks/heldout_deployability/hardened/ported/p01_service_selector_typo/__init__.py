"""Held-out case p01-service-selector-typo: a Pulumi program (its __main__.py)."""
