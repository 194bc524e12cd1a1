"""Held-out case p07-k8s-version-unsupported: a Pulumi program (its __main__.py)."""
