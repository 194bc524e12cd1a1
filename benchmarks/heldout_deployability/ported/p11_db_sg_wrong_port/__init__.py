"""Held-out case p11-db-sg-wrong-port: a Pulumi program (its __main__.py)."""
