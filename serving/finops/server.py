"""The metering consumer's HTTP port: ``/metrics`` for Prometheus, and on one machine the ledger's SQL.

A chDB directory is held by one process, the consumer's; so that ``tokenplane finops`` (and the dev smoke
check) can read the ledger while the stack runs, the consumer answers the subset of ClickHouse's HTTP
interface that ``HttpStore`` speaks: ``POST /?default_format=...`` with the statement as the body, and
``GET /ping``. It listens on loopback only (``tokenplane dev``); in the cluster the ledger is a ClickHouse
server and this port serves ``/metrics`` alone.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from tokenplane.serving import jsonbody
from tokenplane.serving.finops.errors import StoreError
from tokenplane.serving.finops.store import Row, Store

MAX_STATEMENT_BYTES = 16 * 1024 * 1024  # an INSERT of a few thousand rows; larger is not a dev client's request


class SerializedStore:
    """A store used from several threads (the consumer's inserts, the HTTP reads): one statement at a time.

    chDB's session is not safe to share between threads.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()

    def execute(self, sql: str) -> None:
        with self._lock:
            self.store.execute(sql)

    def rows(self, sql: str) -> list[Row]:
        with self._lock:
            return self.store.rows(sql)

    def insert(self, table: str, rows: Iterable[Mapping[str, Any]]) -> int:
        with self._lock:
            return self.store.insert(table, rows)

    def close(self) -> None:
        with self._lock:
            self.store.close()


def create_app(registry: CollectorRegistry, *, store: Store | None) -> Starlette:
    """``/metrics``; with ``store`` (a chDB ledger), also ``/ping`` and ``POST /`` as ClickHouse answers them."""

    async def metrics(_: Request) -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    async def ping(_: Request) -> Response:
        return PlainTextResponse("Ok.\n")

    async def query(request: Request) -> Response:
        if store is None:
            return PlainTextResponse("the ledger is a ClickHouse server; query it there\n", status_code=404)
        body = await request.body()
        if len(body) > MAX_STATEMENT_BYTES:
            return PlainTextResponse(f"statement over {MAX_STATEMENT_BYTES} bytes\n", status_code=413)
        sql = body.decode(errors="replace") or request.query_params.get("query", "")
        try:
            if request.query_params.get("default_format") == "JSONEachRow":
                rows = await asyncio.to_thread(store.rows, sql)
                text = b"".join(jsonbody.dumps(r) + b"\n" for r in rows)
                return Response(text, media_type="application/x-ndjson")
            await asyncio.to_thread(store.execute, sql)
        except StoreError as e:
            return PlainTextResponse(f"{e}\n", status_code=400)
        return PlainTextResponse("")

    routes = [Route("/metrics", metrics), Route("/ping", ping), Route("/", query, methods=["POST"])]
    return Starlette(routes=routes)
