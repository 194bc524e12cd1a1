"""Held-out case p12-readiness-probe-wrong-port: a Pulumi program (its __main__.py)."""
