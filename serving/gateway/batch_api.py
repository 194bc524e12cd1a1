"""OpenAI's Files and Batch APIs: class D work goes in here, is validated, stored, and queued on Kafka.

    POST   /v1/files                    upload a batch input (multipart: file, purpose)
    GET    /v1/files                    the tenant's files, newest first (limit, after, purpose)
    GET    /v1/files/{file_id}          its file object
    GET    /v1/files/{file_id}/content  its bytes
    DELETE /v1/files/{file_id}
    POST   /v1/batches                  validate every line, store the batch, publish the job
    GET    /v1/batches                  the tenant's batches, newest first (limit, after)
    GET    /v1/batches/{batch_id}
    POST   /v1/batches/{batch_id}/cancel

Every route authenticates the API key, and everything is scoped to its
tenant: another tenant's file or batch is a 404. Every route that writes
(an upload, a deletion, a batch's creation or cancellation) counts against the
tenant's requests per minute like any other request, and uploads against its
file count and byte caps (``serving.files.usage``); reads (polling a batch)
do not, so a client waiting on a batch never spends the requests its work needs. The batch workers
(``serving.batch``) run the queued jobs through the same gateway pipeline as
online traffic, at batch priority. While Redis (the batch store) or the file
store is unreachable, a route answers 503 and the tenant retries.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable

from redis.exceptions import RedisError
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tokenplane.serving.errors import InvalidRequest, NotFound, ServingError
from tokenplane.serving.files.batch_lines import parse_input
from tokenplane.serving.files.batch_store import BatchStore
from tokenplane.serving.files.store import (
    MAX_LISTED_FILES,
    MAX_UPLOAD_BYTES,
    FilePurpose,
    FileStore,
    FileStoreUnavailable,
    page,
)
from tokenplane.serving.files.usage import FileUsage
from tokenplane.serving.gateway.app import Gateway
from tokenplane.serving.gateway.edge import error_json
from tokenplane.serving.gateway.params import echo
from tokenplane.serving.gateway.requests import decode_body
from tokenplane.serving.types import Endpoint, EventSink, Json
from tokenplane.spec import Tenant, TopicPurpose

log = logging.getLogger(__name__)

COMPLETION_WINDOWS = {"24h": 24 * 3600.0}  # OpenAI's only window; workload class D's 24-hour deadline
UPLOAD_PURPOSES = (FilePurpose.BATCH,)  # batch_output files are written by the workers, never uploaded
MULTIPART_OVERHEAD_BYTES = 64 * 1024  # boundaries and the purpose field around the file itself
READ_CHUNK_BYTES = 1024 * 1024
MAX_METADATA_PAIRS = 16  # OpenAI's metadata limits
MAX_METADATA_KEY_CHARS = 64
MAX_METADATA_VALUE_CHARS = 512
# Input files validated at once by one gateway process. Each is parsed in a worker thread (50,000 lines
# took 0.9-2.0 s on the event loop): the thread yields the GIL every few milliseconds, and one file's
# decoded lines (about 3x its bytes) are all that is held; the next creation waits its turn.
MAX_CONCURRENT_PARSES = 1

MAX_FILES_PAGE = MAX_LISTED_FILES  # OpenAI's largest (and default) page of files

HttpHandler = Callable[[Request], Awaitable[Response]]


def _too_large(size: int) -> InvalidRequest:
    return InvalidRequest(
        f"the upload is {size} bytes; the limit is {MAX_UPLOAD_BYTES} bytes ({MAX_UPLOAD_BYTES // 2**20} MiB). "
        "Split the requests into several batch files",
        param="file",
        code="file_too_large",
        status=413,
    )


def _metadata(value: object) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidRequest(f"metadata must be an object of strings, got {type(value).__name__}", param="metadata")
    if len(value) > MAX_METADATA_PAIRS:
        raise InvalidRequest(
            f"metadata has {len(value)} keys; at most {MAX_METADATA_PAIRS} are allowed", param="metadata"
        )
    for key, item in value.items():
        if not isinstance(item, str):
            raise InvalidRequest(f"metadata[{key!r}] must be a string, got {type(item).__name__}", param="metadata")
        if len(key) > MAX_METADATA_KEY_CHARS or len(item) > MAX_METADATA_VALUE_CHARS:
            raise InvalidRequest(
                f"metadata[{key[:20]!r}]: keys are at most {MAX_METADATA_KEY_CHARS} characters "
                f"and values at most {MAX_METADATA_VALUE_CHARS}",
                param="metadata",
            )
    return dict(value)


def _store_unavailable(e: RedisError) -> ServingError:
    return ServingError(
        f"the batch store is unavailable ({type(e).__name__}); retry shortly", code="store_unavailable", status=503
    )


def _files_unavailable(e: FileStoreUnavailable) -> ServingError:
    log.warning("file store unavailable: %s", e)  # the bucket and key are for the log, not the tenant
    return ServingError("the file store is unavailable; retry shortly", code="files_unavailable", status=503)


def batch_routes(
    gateway: Gateway, *, files: FileStore, jobs: BatchStore, sink: EventSink, usage: FileUsage | None = None
) -> list[Route]:
    """The Files and Batch API routes over a built ``Gateway``; add them to ``gateway.extra_routes``.

    ``usage`` holds the per-tenant upload caps; by default the caps' constants, in the gateway's Redis.
    """
    usage = usage or FileUsage(gateway.redis)

    def handler(fn: Callable[[Request, Tenant], Awaitable[Response]], *, writes: bool = False) -> HttpHandler:
        async def run(request: Request) -> Response:
            try:
                tenant = gateway.keys.authenticate(request.headers.get("authorization"))
                if writes:  # one request of the tenant's RPM, no tokens: a 429 with Retry-After past it
                    await gateway.limiter.acquire(tenant, tokens=0)
                return await fn(request, tenant)
            except ServingError as e:
                return error_json(e)
            except RedisError as e:
                return error_json(_store_unavailable(e))
            except FileStoreUnavailable as e:
                return error_json(_files_unavailable(e))

        return run

    parsing = asyncio.Semaphore(MAX_CONCURRENT_PARSES)

    async def audit(tenant: Tenant, action: str, **details: object) -> None:
        event = {
            "request_id": f"req_{uuid.uuid4().hex}",
            "ts": gateway.clock.time(),
            "region": gateway.region,
            "tenant": tenant.name,
            "action": action,
            **details,
        }
        await sink.publish(TopicPurpose.AUDIT, tenant.name, event)

    async def upload(request: Request, tenant: Tenant) -> Response:
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > MAX_UPLOAD_BYTES + MULTIPART_OVERHEAD_BYTES:
            raise _too_large(int(declared))
        try:
            form = await request.form(max_files=1, max_fields=4)
        except HTTPException as e:
            raise InvalidRequest(f"the upload is not valid multipart/form-data: {e.detail}", param="file") from e
        try:
            purpose, part = form.get("purpose"), form.get("file")
            if purpose not in {p.value for p in UPLOAD_PURPOSES}:
                raise InvalidRequest(
                    f"purpose={purpose!r} is not supported; upload batch inputs with purpose 'batch'", param="purpose"
                )
            if not isinstance(part, UploadFile):
                raise InvalidRequest("send the file as the multipart field 'file'", param="file")
            data = bytearray()
            while chunk := await part.read(READ_CHUNK_BYTES):
                data += chunk
                if len(data) > MAX_UPLOAD_BYTES:
                    raise _too_large(len(data))
            await usage.reserve(tenant.name, len(data))
            try:
                obj = await files.put(tenant.name, str(purpose), part.filename or "upload.jsonl", bytes(data))
            except BaseException:
                await usage.release(tenant.name, len(data))
                raise
        finally:
            await form.close()
        await audit(tenant, "file.uploaded", file_id=obj["id"], bytes=obj["bytes"], purpose=obj["purpose"])
        return JSONResponse(obj)

    async def list_files(request: Request, tenant: Tenant) -> Response:
        raw_limit = request.query_params.get("limit", str(MAX_FILES_PAGE))
        if not raw_limit.isdigit() or not 1 <= int(raw_limit) <= MAX_FILES_PAGE:
            raise InvalidRequest(
                f"limit={echo(raw_limit)} must be a whole number from 1 to {MAX_FILES_PAGE}", param="limit"
            )
        purpose = request.query_params.get("purpose")
        data, has_more = page(
            await files.objects(tenant.name),
            limit=int(raw_limit),
            after=request.query_params.get("after"),
            purpose=purpose,
        )
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
                "has_more": has_more,
            }
        )

    async def file_object(request: Request, tenant: Tenant) -> Response:
        return JSONResponse(await files.get(tenant.name, request.path_params["file_id"]))

    async def file_content(request: Request, tenant: Tenant) -> Response:
        data = await files.content(tenant.name, request.path_params["file_id"])
        return Response(data, media_type="application/octet-stream")

    async def file_delete(request: Request, tenant: Tenant) -> Response:
        meta = await files.get(tenant.name, request.path_params["file_id"])
        deleted = await files.delete(tenant.name, request.path_params["file_id"])
        if meta.get("purpose") in {p.value for p in UPLOAD_PURPOSES}:  # only uploads count against the caps
            await usage.release(tenant.name, int(meta.get("bytes", 0)))
        await audit(tenant, "file.deleted", file_id=deleted["id"])
        return JSONResponse(deleted)

    async def create_batch(request: Request, tenant: Tenant) -> Response:
        body = decode_body(await request.body())
        input_file_id = body.get("input_file_id")
        if not isinstance(input_file_id, str):
            raise InvalidRequest(
                "input_file_id is required: the id of an uploaded purpose='batch' file", param="input_file_id"
            )
        if body.get("endpoint") not in {e.value for e in Endpoint}:
            raise InvalidRequest(
                f"endpoint={body.get('endpoint')!r} is not supported; use one of {[e.value for e in Endpoint]}",
                param="endpoint",
            )
        endpoint = Endpoint(str(body["endpoint"]))
        window = body.get("completion_window")
        if window not in COMPLETION_WINDOWS:
            raise InvalidRequest(
                f"completion_window={window!r} is not supported; use one of {list(COMPLETION_WINDOWS)}",
                param="completion_window",
            )
        metadata = _metadata(body.get("metadata"))
        meta = await files.get(tenant.name, input_file_id)
        if meta.get("purpose") != FilePurpose.BATCH.value:
            raise InvalidRequest(
                f"file {input_file_id} has purpose {meta.get('purpose')!r}; a batch reads a purpose='batch' file",
                param="input_file_id",
            )
        data = await files.content(tenant.name, input_file_id)
        async with parsing:
            lines = await asyncio.to_thread(parse_input, data, endpoint)
        now = gateway.clock.time()
        batch = await jobs.create(
            tenant.name,
            endpoint=endpoint.value,
            input_file_id=input_file_id,
            completion_window=str(window),
            completion_window_seconds=COMPLETION_WINDOWS[str(window)],
            total=len(lines),
            created_at=now,
            metadata=metadata,
        )
        job: Json = {
            "batch_id": batch["id"],
            "tenant": tenant.name,
            "endpoint": endpoint.value,
            "input_file_id": input_file_id,
            "created_at": now,
            "expires_at": batch["expires_at"],
        }
        # Keyed by tenant: one tenant's batches share a partition and run in order, so one tenant's
        # flood of batches occupies one worker, not all of them.
        await sink.publish(TopicPurpose.BATCH, tenant.name, job)
        await audit(tenant, "batch.created", batch_id=batch["id"], input_file_id=input_file_id, requests=len(lines))
        return JSONResponse(batch)

    async def get_batch(request: Request, tenant: Tenant) -> Response:
        return JSONResponse(await jobs.get(tenant.name, request.path_params["batch_id"]))

    async def list_batches(request: Request, tenant: Tenant) -> Response:
        raw_limit = request.query_params.get("limit", "20")
        if not raw_limit.isdigit():
            raise InvalidRequest(f"limit={raw_limit!r} must be a whole number", param="limit")
        data, has_more = await jobs.page(tenant.name, limit=int(raw_limit), after=request.query_params.get("after"))
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
                "has_more": has_more,
            }
        )

    async def cancel_batch(request: Request, tenant: Tenant) -> Response:
        batch = await jobs.cancel(tenant.name, request.path_params["batch_id"], at=gateway.clock.time())
        await audit(tenant, "batch.cancelled", batch_id=batch["id"], status=batch["status"])
        return JSONResponse(batch)

    return [
        Route("/v1/files", handler(upload, writes=True), methods=["POST"]),
        Route("/v1/files", handler(list_files), methods=["GET"]),
        Route("/v1/files/{file_id}", handler(file_object), methods=["GET"]),
        Route("/v1/files/{file_id}", handler(file_delete, writes=True), methods=["DELETE"]),
        Route("/v1/files/{file_id}/content", handler(file_content), methods=["GET"]),
        Route("/v1/batches", handler(create_batch, writes=True), methods=["POST"]),
        Route("/v1/batches", handler(list_batches), methods=["GET"]),
        Route("/v1/batches/{batch_id}", handler(get_batch), methods=["GET"]),
        Route("/v1/batches/{batch_id}/cancel", handler(cancel_batch, writes=True), methods=["POST"]),
    ]


def batch_api_absent_routes(gateway: Gateway) -> list[Route]:
    """The Files and Batch API paths in a region that runs no batch workers: an OpenAI-shaped 404 that says why.

    Authentication still comes first, so an unauthenticated caller learns nothing about the region.
    """

    async def absent(request: Request) -> Response:
        try:
            gateway.keys.authenticate(request.headers.get("authorization"))
        except ServingError as e:
            return error_json(e)
        error = NotFound(
            f"the Files and Batch API is not offered in region {gateway.region}: none of its pools serves "
            "class D (batch), so it runs no batch workers. Send batch jobs to a region that does, or add D "
            "to the classes of one of this region's pools in the spec.",
            code="batch_api_unavailable",
        )
        return error_json(error)

    methods = ["GET", "POST", "DELETE"]
    return [
        Route("/v1/files{rest:path}", absent, methods=methods),
        Route("/v1/batches{rest:path}", absent, methods=methods),
    ]
