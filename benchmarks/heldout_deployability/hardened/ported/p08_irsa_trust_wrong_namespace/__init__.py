"""Held-out case p08-irsa-trust-wrong-namespace: a Pulumi program (its __main__.py)."""
