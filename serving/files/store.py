"""The Files API's storage: batch inputs that tenants upload and the outputs batch workers write.

A file belongs to exactly one tenant. Asking for another tenant's file is a
404 ``NotFound``, the same answer as for a file that never existed, so that
ids cannot be probed. ``DirectoryFileStore`` keeps each file under
``root/<tenant>/`` on a directory the gateway and the batch workers share (one
machine: ``tokenplane dev``); in a cloud region ``serving.files.s3``
meets the same Protocol in S3. ``serving.gateway.runtime.file_store`` picks one
from the environment.

A store raises ``NotFound`` for a file the tenant does not have, ``ValueError``
for a tenant name or purpose no caller should send, and ``FileStoreUnavailable``
(an ``OSError``, deliberately not a ``ServingError``) when its storage fails: a
batch worker lets that propagate so that its job is retried, where a
``ServingError`` would fail the batch.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from tokenplane.serving.errors import NotFound
from tokenplane.serving.types import Clock, Json, SystemClock

# OpenAI allows 200 MB for a batch input. The gateway holds an upload in memory while it validates every
# line (the bytes, then the decoded JSON, roughly 3x), and its pod's limit is 2 GiB
# (components/gateway.py), so 100 MiB keeps two concurrent uploads well inside it. 100 MiB is still
# about 50,000 requests of 2 KB each, OpenAI's per-batch request limit.
MAX_UPLOAD_BYTES = 100 * 1024 * 1024
MAX_FILENAME_CHARS = 255  # what most filesystems allow; the name is metadata only, never a path

# Files one listing reads: OpenAI's largest page (10,000). A tenant keeps at most 500 uploads
# (serving.files.usage) plus its batches' outputs, so this bounds a listing that would otherwise read them all.
MAX_LISTED_FILES = 10_000

FILE_ID = re.compile(r"^file-[0-9a-f]{32}$")
TENANT_DIR = re.compile(r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$")  # tokenplane.spec.Name: a safe directory name


class FilePurpose(StrEnum):
    BATCH = "batch"  # an uploaded batch input (JSONL of requests)
    BATCH_OUTPUT = "batch_output"  # a batch's output or error file, written by a worker


class FileStore(Protocol):
    """Tenant-scoped file storage in OpenAI's file object terms."""

    async def put(self, tenant: str, purpose: str, filename: str, data: bytes) -> Json:
        """Store ``data``; return its file object (``id`` "file-<hex>", ``object`` "file", ``bytes``, ...)."""
        ...

    async def get(self, tenant: str, file_id: str) -> Json:
        """The file object; ``NotFound`` if the tenant has no such file."""
        ...

    async def content(self, tenant: str, file_id: str) -> bytes:
        """The file's bytes; ``NotFound`` if the tenant has no such file."""
        ...

    async def delete(self, tenant: str, file_id: str) -> Json:
        """Remove the file; return OpenAI's deletion object ``{"id", "object": "file", "deleted": true}``."""
        ...

    async def objects(self, tenant: str) -> list[Json]:
        """The tenant's file objects, in no order, at most ``MAX_LISTED_FILES`` of them."""
        ...


def page(objects: list[Json], *, limit: int, after: str | None, purpose: str | None) -> tuple[list[Json], bool]:
    """OpenAI's file listing: newest first, from just after the file ``after``, ``limit`` of them, and whether
    more follow. An ``after`` that names no listed file starts from the newest."""
    ordered = sorted(
        (o for o in objects if purpose is None or o.get("purpose") == purpose),
        key=lambda o: (o.get("created_at", 0), o.get("id", "")),
        reverse=True,
    )
    start = next((i + 1 for i, o in enumerate(ordered) if o.get("id") == after), 0) if after else 0
    chosen = ordered[start : start + limit]
    return chosen, start + limit < len(ordered)


class FileStoreUnavailable(OSError):
    """The storage under a file store failed (S3 refused or timed out); retryable, never the tenant's doing."""


def not_found(file_id: str) -> NotFound:
    return NotFound(f"No such File object: {file_id}", param="file_id", code="file_not_found")


def check_tenant(tenant: str) -> str:
    """``tenant``, if it is a spec tenant name and so safe as a folder or key segment; else ``ValueError``."""
    if not TENANT_DIR.match(tenant):
        raise ValueError(f"tenant {tenant!r} is not a spec tenant name (lowercase letters, digits and '-')")
    return tenant


def check_file_id(file_id: str) -> str:
    """``file_id``, if it has the shape ids are minted in (which also keeps '../' out); else ``NotFound``."""
    if not FILE_ID.match(file_id):
        raise not_found(file_id)
    return file_id


def new_file_object(purpose: str, filename: str, size: int, *, created_at: float) -> Json:
    """A fresh file object with a new id; ``ValueError`` for a purpose that is not a ``FilePurpose``."""
    if purpose not in {p.value for p in FilePurpose}:
        raise ValueError(f"purpose {purpose!r} is not one of {[p.value for p in FilePurpose]}")
    # The id opens with the upload's millisecond (12 hex digits) and ends in 80 random bits: created_at is
    # whole seconds, as OpenAI's is, and files uploaded within one second still list newest first by id.
    return {
        "id": f"file-{round(created_at * 1000):012x}{secrets.token_hex(10)}",
        "object": "file",
        "bytes": size,
        "created_at": int(created_at),
        "filename": filename[:MAX_FILENAME_CHARS],
        "purpose": purpose,
        "status": "processed",
        "status_details": None,
        "expires_at": None,
    }


def deleted(file_id: str) -> Json:
    """OpenAI's deletion object."""
    return {"id": file_id, "object": "file", "deleted": True}


def _write_atomically(path: Path, data: bytes) -> None:
    """Write to a temporary name in the same directory, then rename: readers see all of it or nothing."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with temporary.open("wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


class DirectoryFileStore:
    """Files on a local or mounted directory: ``root/<tenant>/<file_id>.data`` and ``<file_id>.json``.

    The content is written before the metadata, and the metadata is what makes
    a file exist, so a crash between the two leaves an orphan, never a file
    object without content. Blocking filesystem calls run in a thread.
    """

    def __init__(self, root: Path, *, clock: Clock | None = None) -> None:
        self.root = Path(root)
        self.clock = clock or SystemClock()

    def _paths(self, tenant: str, file_id: str) -> tuple[Path, Path]:
        check_file_id(file_id)
        folder = self.root / check_tenant(tenant)
        return folder / f"{file_id}.data", folder / f"{file_id}.json"

    async def put(self, tenant: str, purpose: str, filename: str, data: bytes) -> Json:
        obj = new_file_object(purpose, filename, len(data), created_at=self.clock.time())
        content, meta = self._paths(tenant, obj["id"])

        def write() -> None:
            content.parent.mkdir(parents=True, exist_ok=True)
            _write_atomically(content, data)
            _write_atomically(meta, json.dumps(obj).encode())

        await asyncio.to_thread(write)
        return obj

    async def get(self, tenant: str, file_id: str) -> Json:
        _, meta = self._paths(tenant, file_id)
        try:
            raw = await asyncio.to_thread(meta.read_bytes)
        except FileNotFoundError:
            raise not_found(file_id) from None
        obj: Json = json.loads(raw)
        return obj

    async def content(self, tenant: str, file_id: str) -> bytes:
        content, meta = self._paths(tenant, file_id)

        def read() -> bytes:
            if not meta.exists():
                raise FileNotFoundError(meta)
            return content.read_bytes()

        try:
            return await asyncio.to_thread(read)
        except FileNotFoundError:
            raise not_found(file_id) from None

    async def delete(self, tenant: str, file_id: str) -> Json:
        content, meta = self._paths(tenant, file_id)

        def remove() -> None:
            meta.unlink()  # first: from here on the file does not exist
            content.unlink(missing_ok=True)

        try:
            await asyncio.to_thread(remove)
        except FileNotFoundError:
            raise not_found(file_id) from None
        return deleted(file_id)

    async def objects(self, tenant: str) -> list[Json]:
        folder = self.root / check_tenant(tenant)

        def read() -> list[Json]:
            out: list[Json] = []
            for meta in sorted(folder.glob("file-*.json"))[:MAX_LISTED_FILES]:
                try:
                    out.append(json.loads(meta.read_bytes()))
                except FileNotFoundError:  # deleted while listed
                    continue
            return out

        return await asyncio.to_thread(read)
