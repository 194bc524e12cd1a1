"""Held-out case c01-servicemonitor-after-kps: a Pulumi program (its __main__.py)."""
