"""Held-out case p13-keda-query-metric-typo: a Pulumi program (its __main__.py)."""
