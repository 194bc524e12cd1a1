"""Held-out case p05-scaledobject-before-keda: a Pulumi program (its __main__.py)."""
