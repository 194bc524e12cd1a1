"""Held-out case p04-namespace-not-created: a Pulumi program (its __main__.py)."""
