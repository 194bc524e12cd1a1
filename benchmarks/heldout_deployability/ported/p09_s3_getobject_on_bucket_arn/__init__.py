"""Held-out case p09-s3-getobject-on-bucket-arn: a Pulumi program (its __main__.py)."""
