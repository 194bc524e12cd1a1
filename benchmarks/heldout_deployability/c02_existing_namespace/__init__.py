"""Held-out case c02-existing-namespace: a Pulumi program (its __main__.py)."""
