"""Held-out case p14-certificate-never-validated: a Pulumi program (its __main__.py)."""
