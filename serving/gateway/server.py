"""The AI gateway's HTTP servers: the public port with connection timeouts, and the metrics port.

uvicorn times out an idle keep-alive connection only after a response, so a
client that connects and then sends its headers a byte at a time (or nothing
at all) holds a connection, and a slot of the process, for ever. A few
hundred such connections are a denial of service that needs no key.
``HeaderTimeoutProtocol`` closes a connection whose request headers are not
complete ``HEADER_TIMEOUT_S`` after the connection opened or the request's
first byte arrived; the body has its own deadline (``edge.BodyLimit``).

The metrics port serves ``/metrics`` only: the per-tenant series are the
operator's, so they stay off the load balancer's port.
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

# Headers arrive in one packet from any real client; 10 s covers a congested mobile link with room.
HEADER_TIMEOUT_S = 10.0
KEEPALIVE_TIMEOUT_S = 5  # idle between requests on a kept-alive connection (uvicorn's default)


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, closing connections whose request headers do not arrive in time."""

    header_timeout_s = HEADER_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # uvicorn's own signature
        super().connection_made(transport)
        self._arm_header_timer()  # a connection that never sends a byte is covered too

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._header_timer is None:  # the next request on a kept-alive connection
            self._arm_header_timer()

    def on_headers_complete(self) -> None:
        self._disarm_header_timer()
        super().on_headers_complete()

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


def public_server(app: ASGIApp, *, host: str, port: int) -> uvicorn.Server:
    """The public port: httptools with the header timeout, no access log (metrics and traces cover it)."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=HeaderTimeoutProtocol,
        timeout_keep_alive=KEEPALIVE_TIMEOUT_S,
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
