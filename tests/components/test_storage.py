"""Every bucket the stacks create has one lifecycle configuration, and it aborts incomplete multipart uploads."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.components.conftest import mock_id, rendered

BUCKET = "aws:s3/bucket:Bucket"
LIFECYCLE = "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"


@pytest.mark.parametrize("name", ["dev", "minimal", "byteion"])
def test_every_bucket_has_one_lifecycle_configuration_that_aborts_incomplete_uploads(name: str) -> None:
    result = rendered(name)
    buckets = {mock_id(b): b for b in result.resources if b.type == BUCKET}
    configs = [c for c in result.resources if c.type == LIFECYCLE]
    per_bucket = Counter(c.inputs.get("bucket") for c in configs)
    assert set(per_bucket) == set(buckets), "a bucket without a lifecycle configuration, or one for no bucket"
    assert max(per_bucket.values()) == 1, f"S3 keeps one lifecycle configuration per bucket: {per_bucket}"
    for config in configs:
        aborts = [r for r in config.inputs["rules"] if r.get("abortIncompleteMultipartUpload") and not r.get("filter")]
        assert aborts and aborts[0]["status"] == "Enabled", config.urn
        assert not any(r.get("expiration") for r in config.inputs["rules"]), "nothing a registry holds expires"
