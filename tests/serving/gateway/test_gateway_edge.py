"""The public port's edge: body limits before any work, OpenAI-shaped errors with nothing internal, timeouts."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import MutableMapping
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tokenplane.dev.standins import free_port
from tokenplane.serving.errors import RequestTooLarge, UpstreamStreamBroken, UpstreamUnavailable
from tokenplane.serving.gateway.edge import MAX_BODY_BYTES, BodyLimit, error_json, public_app
from tokenplane.serving.gateway.server import HeaderTimeoutProtocol
from tokenplane.serving.gateway.streams import error_event

MiB = 1024 * 1024


class Recorder:
    """An ASGI app that reads the whole body (as the gateway does) and records what it saw."""

    def __init__(self) -> None:
        self.called = False
        self.read = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.called = True
        request = Request(scope, receive)
        async for chunk in request.stream():
            self.read += len(chunk)
        await JSONResponse({"read": self.read})(scope, receive, send)


def scope(headers: dict[str, str], path: str = "/v1/chat/completions") -> dict[str, Any]:
    return {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
        "query_string": b"",
    }


async def call(app: Any, asgi_scope: dict[str, Any], receive: Any) -> tuple[int, dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(asgi_scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(body)


async def test_a_declared_length_over_the_limit_is_a_413_before_the_app_or_auth_runs() -> None:
    inner = Recorder()

    async def receive() -> dict[str, Any]:
        raise AssertionError("not one byte of an oversized body may be read")

    status, body = await call(BodyLimit(inner), scope({"content-length": str(300 * MiB)}), receive)
    assert status == 413
    assert body["error"]["code"] == "request_too_large"
    assert str(MAX_BODY_BYTES) in body["error"]["message"]
    assert not inner.called


async def test_a_chunked_body_is_cut_off_at_the_limit_without_reading_the_rest() -> None:
    inner = Recorder()
    chunks_sent = 0

    async def receive() -> dict[str, Any]:  # an endless chunked body, 1 MiB a message
        nonlocal chunks_sent
        chunks_sent += 1
        return {"type": "http.request", "body": b"x" * MiB, "more_body": True}

    status, body = await call(BodyLimit(inner), scope({"transfer-encoding": "chunked"}), receive)
    assert status == 413
    assert body["error"]["code"] == "request_too_large"
    assert chunks_sent <= MAX_BODY_BYTES // MiB + 1  # memory stays bounded by the limit, not by the sender


async def test_a_json_body_past_the_cost_bounds_is_a_400_at_the_chunk_that_crosses_them() -> None:
    """2 MiB of nested empty arrays, from anyone: refused (and the connection closed) once its first chunks
    cross the decode bounds, never read, scanned or decoded whole. Put back (the body read to its end and
    refused by the decoder), all 32 chunks were read first and the 400 kept the connection open."""
    inner = Recorder()
    chunks_sent = 0
    total = 32

    async def receive() -> dict[str, Any]:
        nonlocal chunks_sent
        chunks_sent += 1
        return {"type": "http.request", "body": b"[]," * (64 * 1024 // 3), "more_body": chunks_sent < total}

    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    await BodyLimit(inner)(scope({"transfer-encoding": "chunked"}), receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = json.loads(b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"))
    assert start["status"] == 400
    assert body["error"]["code"] == "invalid_json"
    assert "arrays and objects" in body["error"]["message"]
    assert (b"connection", b"close") in start["headers"]  # the unread rest is never drained
    assert chunks_sent <= 2, chunks_sent


async def test_a_file_upload_is_not_metered_as_json() -> None:
    """The upload is multipart (its file is checked line by line off the loop): brackets are only bytes."""
    inner = Recorder()
    messages = [{"type": "http.request", "body": b"[" * 200_000, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return messages.pop()

    status, body = await call(BodyLimit(inner), scope({}, path="/v1/files"), receive)
    assert (status, body) == (200, {"read": 200_000})


async def test_a_body_that_trickles_in_past_the_deadline_is_a_408() -> None:
    async def receive() -> dict[str, Any]:
        await asyncio.sleep(0.05)
        return {"type": "http.request", "body": b"x", "more_body": True}

    status, body = await call(BodyLimit(Recorder(), timeout_s=0.3), scope({}), receive)
    assert status == 408
    assert body["error"]["code"] == "request_timeout"


async def test_after_the_body_receive_waits_for_a_disconnect_without_any_deadline() -> None:
    """A long stream listens for the client's disconnect; the body deadline must not end it."""
    messages = [{"type": "http.request", "body": b"{}", "more_body": False}]
    saw: list[str] = []

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await asyncio.sleep(0.5)  # well past the body deadline below
        return {"type": "http.disconnect"}

    async def app(asgi_scope: Any, asgi_receive: Any, send: Any) -> None:
        await asgi_receive()
        saw.append((await asgi_receive())["type"])
        await JSONResponse({})(asgi_scope, asgi_receive, send)

    status, _ = await call(BodyLimit(app, timeout_s=0.1), scope({}), receive)
    assert (status, saw) == (200, ["http.disconnect"])


async def test_unknown_paths_wrong_methods_and_trailing_slashes_get_openai_shaped_errors() -> None:
    async def ok(request: Request) -> Response:
        return JSONResponse({"id": request.path_params["batch_id"]})

    app = public_app([Route("/v1/batches/{batch_id}", ok, methods=["GET"])])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
        missing = await client.get("/v1/nope")
        wrong = await client.delete("/v1/batches/b1")
        traversal = await client.get("/v1/batches/batch_%2e%2e%2f")
        fine = await client.get("/v1/batches/b1")
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (405, "method_not_allowed")
    assert traversal.status_code == 404, "no 307 to another path"
    assert traversal.json()["error"]["type"] == "invalid_request_error"
    assert fine.json() == {"id": "b1"}


async def test_a_route_that_raises_is_an_openai_shaped_500_with_the_request_id_not_the_exception() -> None:
    async def broken(request: Request) -> Response:
        raise KeyError("secret-internal-detail")

    app = public_app([Route("/v1/x", broken)])
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, raise_app_exceptions=False), base_url="http://gw"
    ) as client:
        response = await client.get("/v1/x")
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "internal_error"
    assert "secret-internal-detail" not in response.text and "KeyError" not in response.text


def test_upstream_failures_reach_the_client_without_urls_or_secret_references(caplog: pytest.LogCaptureFixture) -> None:
    detail = (
        "no target answered after 2 attempts: pool:small@small at http://127.0.0.1:18003 answered HTTP 500: "
        "internal error: UnicodeEncodeError; provider:openai@large: unavailable (env://OPENAI_API_KEY did not resolve)"
    )
    with caplog.at_level(logging.WARNING):
        response = error_json(UpstreamUnavailable(detail), request_id="req_1")
        event = error_event(UpstreamStreamBroken(detail), request_id="req_2")
    text = bytes(response.body).decode() + event.decode()
    for leak in ("127.0.0.1", "env://", "OPENAI_API_KEY", "UnicodeEncodeError", "pool:small"):
        assert leak not in text
    assert json.loads(bytes(response.body))["error"]["code"] == "upstream_unavailable"
    assert "req_1" in text and "req_2" in text
    assert detail in caplog.text  # the operator still gets the whole story, with the request id


def start_server(header_timeout_s: float) -> tuple[uvicorn.Server, int]:
    class Quick(HeaderTimeoutProtocol):
        pass

    Quick.header_timeout_s = header_timeout_s

    async def hello(request: Request) -> Response:
        return JSONResponse({"ok": True})

    port = free_port()
    config = uvicorn.Config(
        public_app([Route("/hi", hello)]), host="127.0.0.1", port=port, http=Quick, log_level="warning"
    )
    return uvicorn.Server(config), port


def read_until_closed(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


async def test_a_connection_whose_headers_never_finish_is_closed_and_a_prompt_one_is_served() -> None:
    server, port = start_server(header_timeout_s=0.5)
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        with (
            socket.create_connection(("127.0.0.1", port)) as slow,
            socket.create_connection(("127.0.0.1", port)) as silent,
        ):
            slow.settimeout(30)  # a safety net for the test itself; the server must close well before
            silent.settimeout(30)
            slow.sendall(b"POST /hi HTTP/1.1\r\nHost: x\r\nX-Slow: a")  # and never the rest
            assert await asyncio.to_thread(read_until_closed, slow) == b""
            assert await asyncio.to_thread(read_until_closed, silent) == b""
        async with httpx.AsyncClient() as client:
            assert (await client.get(f"http://127.0.0.1:{port}/hi")).json() == {"ok": True}
    finally:
        server.should_exit = True
        await task


async def test_a_body_cut_off_inside_a_route_that_answers_itself_still_closes_the_connection() -> None:
    """The gateway's routes catch ``RequestTooLarge`` themselves; the rest of the body must not be drained."""

    async def app(asgi_scope: Any, receive: Any, send: Any) -> None:
        try:
            await Request(asgi_scope, receive).body()
        except RequestTooLarge as e:
            await error_json(e)(asgi_scope, receive, send)

    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"x" * MiB, "more_body": True}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    await BodyLimit(app)(scope({}), receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    assert start["status"] == 413
    assert (b"connection", b"close") in start["headers"]


async def test_a_body_a_little_over_the_limit_is_drained_so_the_client_reads_its_413() -> None:
    inner = Recorder()
    chunks = [{"type": "http.request", "body": b"x" * MiB, "more_body": True} for _ in range(9)]
    chunks[-1]["more_body"] = False
    taken = 0

    async def receive() -> dict[str, Any]:
        nonlocal taken
        taken += 1
        return chunks.pop(0)

    status, _ = await call(BodyLimit(inner), scope({"content-length": str(9 * MiB)}), receive)
    assert (status, taken, inner.called) == (413, 9, False)
