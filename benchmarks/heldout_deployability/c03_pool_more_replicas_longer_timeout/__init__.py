"""Held-out case c03-pool-more-replicas-longer-timeout: a Pulumi program (its __main__.py)."""
