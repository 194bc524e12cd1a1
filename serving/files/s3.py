"""The Files API in S3: where the AI gateway and the batch workers meet in a cloud region.

Their pods share no volume (and the gateway's root filesystem is read-only),
so in a region files live in the batch workers' results bucket, laid out as
``DirectoryFileStore`` lays out its directory::

    <prefix>/<tenant>/<file_id>.data   the bytes
    <prefix>/<tenant>/<file_id>.json   the file object, written second

The metadata object is what makes a file exist: ``put`` writes the content
first and ``delete`` removes the metadata first, so a failure in between
leaves an orphan, never a file object without content. Each PUT is atomic in
S3, so no reader sees part of an object. Another tenant's id names a key under
another prefix, which this tenant's calls never read: a 404 ``NotFound``, the
same as an id that never existed.

boto3 is blocking, so every call runs in a thread. A missing key is
``NotFound``; any other S3 or transport failure (a missing bucket, a role
without access) is ``FileStoreUnavailable``.
Deleting in a versioned bucket leaves a delete marker over the old versions;
the bucket's lifecycle, not this store, decides how long those are kept.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, TypeVar

import boto3  # type: ignore[import-untyped]  # boto3 ships no type hints; boto3-stubs is not a dependency
from botocore.config import Config  # type: ignore[import-untyped]  # as above
from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]  # as above

from tokenplane.runtime_env import DEFAULT_FILES_PREFIX
from tokenplane.serving.errors import NotFound
from tokenplane.serving.files.store import (
    MAX_LISTED_FILES,
    FileStoreUnavailable,
    check_file_id,
    check_tenant,
    deleted,
    new_file_object,
    not_found,
)
from tokenplane.serving.types import Clock, Json, SystemClock

T = TypeVar("T")

MAX_PUT_BYTES = 5 * 1024**3  # S3's limit for one PutObject; the largest file (a batch's output) is far below it
# S3's error code for a key that is not there. Reads use GetObject, never HeadObject, whose bare "404"
# would also cover a bucket that does not exist: that is a deployment mistake, not a tenant's missing file.
MISSING_CODES = frozenset({"NoSuchKey"})
# botocore's "standard" retry mode backs off on throttling and 5xx; three attempts ride out a blip, and a
# longer outage is the caller's to handle (the gateway answers 503; a batch worker exits and is restarted).
S3_ATTEMPTS = 3
S3_CONNECT_TIMEOUT_SECONDS = 5.0
# A 100 MiB upload (files.MAX_UPLOAD_BYTES) needs well under a minute from inside the region.
S3_READ_TIMEOUT_SECONDS = 60.0


def s3_client(*, region: str | None = None, endpoint_url: str | None = None) -> Any:
    """A boto3 S3 client with bounded retries and timeouts; credentials come from the pod's IAM role."""
    config = Config(
        retries={"mode": "standard", "max_attempts": S3_ATTEMPTS},
        connect_timeout=S3_CONNECT_TIMEOUT_SECONDS,
        read_timeout=S3_READ_TIMEOUT_SECONDS,
    )
    return boto3.session.Session().client("s3", region_name=region, endpoint_url=endpoint_url, config=config)


class S3FileStore:
    """Files in one S3 bucket under ``prefix``, one folder per tenant; the ``FileStore`` Protocol.

    Args:
        client: A boto3 S3 client (``s3_client``); boto3 clients are safe to share between threads.
        bucket: The bucket's name.
        prefix: The folder of the bucket the files live under; ``""`` for the bucket's root.
        clock: Where ``created_at`` comes from.
    """

    def __init__(
        self, client: Any, bucket: str, *, prefix: str = DEFAULT_FILES_PREFIX, clock: Clock | None = None
    ) -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.clock = clock or SystemClock()

    def _keys(self, tenant: str, file_id: str) -> tuple[str, str]:
        check_file_id(file_id)
        folder = "/".join(p for p in (self.prefix, check_tenant(tenant)) if p)
        return f"{folder}/{file_id}.data", f"{folder}/{file_id}.json"

    def _call(self, file_id: str, key: str, method: Callable[..., T], **kwargs: Any) -> T:
        """One S3 call on ``key``: a missing key is ``NotFound``, any other failure ``FileStoreUnavailable``."""
        try:
            return method(Bucket=self.bucket, Key=key, **kwargs)
        except ClientError as e:
            code = str(e.response.get("Error", {}).get("Code", ""))
            if code in MISSING_CODES:
                raise not_found(file_id) from None
            raise FileStoreUnavailable(f"S3 {code or 'error'} on s3://{self.bucket}/{key}: {e}") from e
        except BotoCoreError as e:  # connection, timeout, credentials, a body cut off mid-read
            raise FileStoreUnavailable(f"S3 unreachable for s3://{self.bucket}/{key}: {e}") from e

    def _read(self, file_id: str, key: str) -> bytes:
        def get(**kwargs: Any) -> bytes:
            body: bytes = self.client.get_object(**kwargs)["Body"].read()  # inside _call: a cut-off read maps too
            return body

        return self._call(file_id, key, get)

    async def put(self, tenant: str, purpose: str, filename: str, data: bytes) -> Json:
        obj = new_file_object(purpose, filename, len(data), created_at=self.clock.time())
        content, meta = self._keys(tenant, obj["id"])
        if len(data) > MAX_PUT_BYTES:
            raise ValueError(f"a file of {len(data)} bytes is over S3's {MAX_PUT_BYTES}-byte limit for one upload")

        def write() -> None:
            self._call(obj["id"], content, self.client.put_object, Body=data, ContentType="application/octet-stream")
            metadata = json.dumps(obj).encode()
            self._call(obj["id"], meta, self.client.put_object, Body=metadata, ContentType="application/json")

        await asyncio.to_thread(write)
        return obj

    async def get(self, tenant: str, file_id: str) -> Json:
        _, meta = self._keys(tenant, file_id)
        obj: Json = json.loads(await asyncio.to_thread(self._read, file_id, meta))
        return obj

    async def content(self, tenant: str, file_id: str) -> bytes:
        content, meta = self._keys(tenant, file_id)

        def read() -> bytes:
            self._read(file_id, meta)  # no metadata, no file, even if its bytes are left
            return self._read(file_id, content)

        return await asyncio.to_thread(read)

    async def delete(self, tenant: str, file_id: str) -> Json:
        content, meta = self._keys(tenant, file_id)

        def remove() -> None:
            # DeleteObject succeeds for a key that is not there, so look first: a missing file is a 404.
            self._read(file_id, meta)
            self._call(file_id, meta, self.client.delete_object)  # first: from here on the file does not exist
            self._call(file_id, content, self.client.delete_object)

        await asyncio.to_thread(remove)
        return deleted(file_id)

    async def objects(self, tenant: str) -> list[Json]:
        folder = "/".join(p for p in (self.prefix, check_tenant(tenant)) if p) + "/"

        def read() -> list[Json]:
            keys: list[str] = []
            try:
                for listing in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=folder):
                    keys += [o["Key"] for o in listing.get("Contents", []) if o["Key"].endswith(".json")]
                    if len(keys) >= MAX_LISTED_FILES:
                        break
            except (ClientError, BotoCoreError) as e:
                raise FileStoreUnavailable(f"S3 listing of s3://{self.bucket}/{folder} failed: {e}") from e
            out: list[Json] = []
            for key in keys[:MAX_LISTED_FILES]:
                file_id = key.rsplit("/", 1)[-1].removesuffix(".json")
                try:
                    out.append(json.loads(self._read(file_id, key)))
                except NotFound:  # deleted while listed
                    continue
            return out

        return await asyncio.to_thread(read)
