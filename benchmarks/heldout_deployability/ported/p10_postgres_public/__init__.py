"""Held-out case p10-postgres-public: a Pulumi program (its __main__.py)."""
