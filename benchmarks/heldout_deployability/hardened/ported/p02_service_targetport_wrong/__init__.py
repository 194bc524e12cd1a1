"""Held-out case p02-service-targetport-wrong: a Pulumi program (its __main__.py)."""
