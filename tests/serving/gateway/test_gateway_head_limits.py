"""The request head is bounded before any key is checked: a 431 for too many header bytes or headers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import socket
from collections.abc import AsyncIterator

import httpx
import pytest
import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tokenplane.dev.standins import free_port
from tokenplane.serving.gateway.edge import public_app
from tokenplane.serving.gateway.server import MAX_HEADER_BYTES, MAX_HEADERS, HeaderTimeoutProtocol


class Seen:
    """What the app behind the protocol was asked: a request that reaches it was not refused at the edge."""

    def __init__(self) -> None:
        self.calls = 0

    async def hello(self, request: Request) -> Response:
        self.calls += 1
        return JSONResponse({"ok": True, "headers": len(request.headers)})


@contextlib.asynccontextmanager
async def server(protocol: type[HeaderTimeoutProtocol], seen: Seen) -> AsyncIterator[int]:
    port = free_port()
    app = public_app([Route("/hi", seen.hello, methods=["GET", "POST"])])
    config = uvicorn.Config(app, host="127.0.0.1", port=port, http=protocol, log_level="warning")
    running = uvicorn.Server(config)
    task = asyncio.create_task(running.serve())
    while not running.started:
        await asyncio.sleep(0.01)
    try:
        yield port
    finally:
        running.should_exit = True
        await task


class Unbounded(HeaderTimeoutProtocol):
    """The defect put back: the head limits of the first round (none)."""

    max_header_bytes = math.inf  # type: ignore[assignment]  # the defect: no byte limit
    max_headers = math.inf  # type: ignore[assignment]  # the defect: no count limit


def exchange(port: int, head: bytes) -> bytes:
    """Send a request head and read the answer until the server closes or answers one response."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(30)  # a safety net for the test itself
        sock.sendall(head)
        data = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                data += chunk
                if b"\r\n\r\n" in data and b'"ok"' in data:
                    break
        return data


def big_header(size: int) -> bytes:
    return b"GET /hi HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * size + b"\r\n\r\n"


def many_headers(count: int) -> bytes:
    return b"GET /hi HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(count)) + b"\r\n"


def status_and_body(data: bytes) -> tuple[int, bytes]:
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


@pytest.mark.parametrize(
    "head", [big_header(MAX_HEADER_BYTES + 1024), many_headers(MAX_HEADERS + 1)], ids=["bytes", "count"]
)
async def test_an_oversized_head_is_a_431_in_openais_shape_and_never_reaches_the_app(head: bytes) -> None:
    seen = Seen()
    async with server(HeaderTimeoutProtocol, seen) as port:
        data = await asyncio.to_thread(exchange, port, head)
    status, body = status_and_body(data)
    assert status == 431
    error = json.loads(body)["error"]
    assert error["code"] == "request_header_fields_too_large"
    assert str(MAX_HEADER_BYTES) in error["message"] or str(MAX_HEADERS) in error["message"]
    assert seen.calls == 0


@pytest.mark.parametrize(
    "head", [big_header(MAX_HEADER_BYTES + 1024), many_headers(MAX_HEADERS + 1)], ids=["bytes", "count"]
)
async def test_without_the_limits_the_same_head_reaches_the_app(head: bytes) -> None:
    """The check above can fail: with the limits taken out, the oversized head is read whole and served."""
    seen = Seen()
    async with server(Unbounded, seen) as port:
        data = await asyncio.to_thread(exchange, port, head)
    assert status_and_body(data)[0] == 200
    assert seen.calls == 1


def flood(port: int, head: bytes) -> bool:
    """Send a huge head; whether the server stopped reading before all of it was sent."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(30)
        try:
            sock.sendall(head)
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(65536):
                pass
        except (BrokenPipeError, ConnectionResetError):
            return True
        return False


@pytest.mark.slow
async def test_a_32_mib_head_is_cut_off_long_before_its_end() -> None:
    seen = Seen()
    async with server(HeaderTimeoutProtocol, seen) as port:
        cut = await asyncio.to_thread(flood, port, big_header(32 * 1024 * 1024))
    assert cut, "the server read the whole 32 MiB head"
    assert seen.calls == 0


async def test_heads_within_the_limits_are_served_on_one_kept_alive_connection() -> None:
    """The counters start again with each request: many ordinary requests on one connection pass."""
    seen = Seen()
    async with server(HeaderTimeoutProtocol, seen) as port, httpx.AsyncClient() as client:
        extra = {f"x-h{i}": "v" for i in range(MAX_HEADERS - 10)}
        for _ in range(5):
            response = await client.post(f"http://127.0.0.1:{port}/hi", headers=extra, content=b"{}")
            assert response.status_code == 200
    assert seen.calls == 5
