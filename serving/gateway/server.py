"""The AI gateway's HTTP servers: the public port with connection timeouts, and the metrics port.

uvicorn times out an idle keep-alive connection only after a response, so a
client that connects and then sends its headers a byte at a time (or nothing
at all) holds a connection, and a slot of the process, for ever. A few
hundred such connections are a denial of service that needs no key.
``HeaderTimeoutProtocol`` closes a connection whose request headers are not
complete ``HEADER_TIMEOUT_S`` after the connection opened or the request's
first byte arrived; the body has its own deadline (``edge.BodyLimit``).
It also bounds what a request's head may cost before any key is checked: its
bytes (request line and headers, ``MAX_HEADER_BYTES``) and its number of
headers (``MAX_HEADERS``). Past either, the connection gets a 431 in OpenAI's
error shape and is closed, so a client sending 32 MiB or 100,000 headers costs
the process one read buffer, never the whole head.

The metrics port serves ``/metrics`` only: the per-tenant series are the
operator's, so they stay off the load balancer's port.
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from tokenplane.serving import jsonbody
from tokenplane.serving.errors import HeadersTooLarge

# Headers arrive in one packet from any real client; 10 s covers a congested mobile link with room.
HEADER_TIMEOUT_S = 10.0
KEEPALIVE_TIMEOUT_S = 5  # idle between requests on a kept-alive connection (uvicorn's default)
# A request line and its headers. The official clients send under 1 KiB; a JWT-sized key or a long
# traceparent chain stays well under 8 KiB. 64 KiB is nginx's 4 x 8 KiB large buffers twice over.
MAX_HEADER_BYTES = 64 * 1024
# Headers in one request: the openai client sends about 15; 100 is Go's and Apache's default too.
MAX_HEADERS = 100
# On SIGTERM, how long responses in flight may run on (a stream to its end) before they are cancelled and
# metered as cut. The pod's grace period (components/gateway.py: 120 s, 10 s of it the preStop sleep) must
# cover this, runtime.METERING_WAIT_S and the sink's flush: a SIGKILL would lose the usage events.
DRAIN_TIMEOUT_S = 90


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, closing connections whose request head is too slow, too big or too long."""

    header_timeout_s = HEADER_TIMEOUT_S
    max_header_bytes = MAX_HEADER_BYTES
    max_headers = MAX_HEADERS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None
        self._in_head = True  # bytes that arrive now belong to a request line or headers
        self._head_bytes = 0  # bytes read while the head is incomplete (what the parser may be buffering)
        self._head_size = 0  # the parsed head's own size: the request line, names and values
        self._head_count = 0
        self._refused = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # uvicorn's own signature
        super().connection_made(transport)
        self._arm_header_timer()  # a connection that never sends a byte is covered too

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        in_head = self._in_head
        super().data_received(data)
        # Counted after the feed: one read (at most asyncio's 256 KiB buffer) is parsed whatever its size,
        # and a head that completed inside it was within the limit or has been counted by on_header.
        if in_head and self._in_head:
            self._head_bytes += len(data)
        if self._head_count > self.max_headers:
            self._refuse_head(f"the request has more than {self.max_headers} headers; send at most {self.max_headers}")
        elif max(self._head_bytes, self._head_size) > self.max_header_bytes:
            self._refuse_head(
                f"the request line and headers are more than {self.max_header_bytes} bytes; "
                f"send at most {self.max_header_bytes} (large inputs belong in the body)"
            )

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = 0
        self._head_size = 0
        self._head_count = 0
        if self._header_timer is None:  # the next request on a kept-alive connection
            self._arm_header_timer()

    def on_url(self, url: bytes) -> None:
        self._head_size += len(url)
        if self._head_size <= self.max_header_bytes:
            super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_count += 1
        self._head_size += len(name) + len(value) + 4  # ": " and CRLF
        if self._head_over_limit():
            return  # not kept: data_received answers 431 once this read is parsed
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._disarm_header_timer()
        if self._head_over_limit():
            return  # the app never starts: data_received refuses the request right after this read
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._head_over_limit():  # a refused head has no request cycle to take its body
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self._head_over_limit():
            super().on_message_complete()

    def _head_over_limit(self) -> bool:
        return self._head_count > self.max_headers or self._head_size > self.max_header_bytes

    def _refuse_head(self, message: str) -> None:
        """A 431 in OpenAI's error shape, then close: the rest of the head is never read."""
        self._refused = True
        self._disarm_header_timer()
        if self.transport.is_closing():
            return
        self.logger.info("refusing a request head: %s", message)
        body = jsonbody.dumps(HeadersTooLarge(message).body())
        head = (
            b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
            b"content-type: application/json\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n"
            b"connection: close\r\n\r\n"
        )
        self.transport.write(head + body)
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.logger.info("closing a connection whose request headers took over %.0f s", self.header_timeout_s)
            self.transport.close()


def public_server(app: ASGIApp, *, host: str, port: int, drain_timeout_s: int = DRAIN_TIMEOUT_S) -> uvicorn.Server:
    """The public port: httptools with the header timeout, no access log (metrics and traces cover it).

    ``drain_timeout_s``: on SIGTERM, how long responses in flight may finish before they are cancelled.
    """
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=HeaderTimeoutProtocol,
        timeout_keep_alive=KEEPALIVE_TIMEOUT_S,
        timeout_graceful_shutdown=drain_timeout_s,
        access_log=False,
        log_level="info",
    )
    return uvicorn.Server(config)


def metrics_server(app: ASGIApp, *, host: str, port: int) -> uvicorn.Server:
    """The metrics port, for Prometheus; it has no lifespan of its own (the public app builds the gateway)."""
    config = uvicorn.Config(
        app, host=host, port=port, http="httptools", lifespan="off", access_log=False, log_level="warning"
    )
    return uvicorn.Server(config)


async def serve_both(public: uvicorn.Server, metrics: uvicorn.Server) -> None:
    """Run both servers until the public one stops (SIGTERM, SIGINT), then stop the metrics one.

    The metrics server starts first, so the public server's signal handlers, installed second, are the
    ones a SIGTERM reaches; the public server then drains its connections before the metrics port closes.
    """
    side = asyncio.create_task(metrics.serve())
    while not metrics.started:
        if side.done():
            side.result()  # raises why it stopped (a port in use exits uvicorn with SystemExit)
            raise RuntimeError("the metrics server stopped before it started")
        await asyncio.sleep(0.01)
    try:
        await public.serve()
    finally:
        metrics.should_exit = True
        await side
