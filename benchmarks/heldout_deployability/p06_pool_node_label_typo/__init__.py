"""Held-out case p06-pool-node-label-typo: a Pulumi program (its __main__.py)."""
