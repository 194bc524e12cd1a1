"""S3FileStore: the layout in the bucket, and S3's failures told apart from a tenant's missing file.

The contract it shares with DirectoryFileStore is tested in ``test_files.py``.
"""

from __future__ import annotations

import json
from typing import Any

import boto3  # type: ignore[import-untyped]  # boto3 ships no type hints; boto3-stubs is not a dependency
import pytest
from botocore.config import Config  # type: ignore[import-untyped]  # as above

from tests.serving.conftest import FILES_BUCKET, S3_REGION
from tokenplane.dev.standins import free_port
from tokenplane.serving.errors import NotFound
from tokenplane.serving.files.s3 import S3FileStore
from tokenplane.serving.files.store import FileStoreUnavailable

DATA = b'{"custom_id": "a"}\n'


def keys(s3: Any) -> list[str]:
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=FILES_BUCKET).get("Contents", []))


async def test_a_file_is_its_bytes_and_its_file_object_under_prefix_and_tenant(s3: Any) -> None:
    obj = await S3FileStore(s3, FILES_BUCKET).put("demo", "batch_output", "out.jsonl", DATA)
    assert keys(s3) == [f"files/demo/{obj['id']}.data", f"files/demo/{obj['id']}.json"]
    meta = s3.get_object(Bucket=FILES_BUCKET, Key=f"files/demo/{obj['id']}.json")["Body"].read()
    assert json.loads(meta) == obj
    assert s3.get_object(Bucket=FILES_BUCKET, Key=f"files/demo/{obj['id']}.data")["Body"].read() == DATA


@pytest.mark.parametrize(("prefix", "folder"), [("", "demo"), ("/tenants/files/", "tenants/files/demo")])
async def test_the_prefix_is_the_folder_files_live_under(s3: Any, prefix: str, folder: str) -> None:
    store = S3FileStore(s3, FILES_BUCKET, prefix=prefix)
    obj = await store.put("demo", "batch", "in.jsonl", DATA)
    assert keys(s3) == [f"{folder}/{obj['id']}.data", f"{folder}/{obj['id']}.json"]
    assert await store.content("demo", obj["id"]) == DATA


async def test_bytes_without_their_file_object_are_not_a_file(s3: Any) -> None:
    orphan = "file-" + "a" * 32  # what a put that failed between its two writes leaves
    s3.put_object(Bucket=FILES_BUCKET, Key=f"files/demo/{orphan}.data", Body=DATA)
    store = S3FileStore(s3, FILES_BUCKET)
    for read in (store.get, store.content, store.delete):
        with pytest.raises(NotFound):
            await read("demo", orphan)


async def test_a_deleted_file_leaves_no_current_object(s3: Any) -> None:
    store = S3FileStore(s3, FILES_BUCKET)
    obj = await store.put("demo", "batch", "in.jsonl", DATA)
    await store.delete("demo", obj["id"])
    assert keys(s3) == []


async def test_a_missing_bucket_is_an_outage_not_a_missing_file(s3: Any) -> None:
    store = S3FileStore(s3, "tokenplane-no-such-bucket")
    with pytest.raises(FileStoreUnavailable, match="NoSuchBucket"):
        await store.put("demo", "batch", "in.jsonl", DATA)
    for read in (store.get, store.content, store.delete):
        with pytest.raises(FileStoreUnavailable, match="NoSuchBucket"):
            await read("demo", "file-" + "0" * 32)


async def test_an_unreachable_s3_is_an_outage_not_a_missing_file() -> None:
    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name=S3_REGION)
    client = session.client(
        "s3", endpoint_url=f"http://127.0.0.1:{free_port()}", config=Config(retries={"max_attempts": 1})
    )
    store = S3FileStore(client, FILES_BUCKET)
    with pytest.raises(FileStoreUnavailable, match="unreachable"):
        await store.put("demo", "batch", "in.jsonl", DATA)
    with pytest.raises(FileStoreUnavailable, match="unreachable"):
        await store.content("demo", "file-" + "0" * 32)
