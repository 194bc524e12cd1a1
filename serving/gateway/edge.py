"""The public port's edge: limits that hold before any work is done, and errors that say nothing internal.

The AI gateway's Service is a public load balancer, so everything here runs
for anyone who can open a connection, key or no key:

- ``BodyLimit`` refuses a body over the limit from its ``Content-Length``
  before a byte of it is read (and before authentication), and counts the
  bytes of a chunked body as they arrive, so memory stays flat whatever is
  sent. A body that trickles in is cut off after ``BODY_READ_TIMEOUT_S``.
  A JSON body's decode cost is counted chunk by chunk as it arrives too
  (``jsonbody.CostMeter``): one past the bounds is a 400 at the chunk that
  crosses them, before it is read whole, scanned whole or decoded.
- ``exception_handlers`` answer unknown paths, wrong methods and any failure
  that escaped a route in OpenAI's error shape, never Starlette's plain text.
- ``public_app`` builds the Starlette app with both, and without the trailing
  slash redirect (``/v1/batches/x%2f`` would otherwise be a 307 to another path).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tokenplane.serving import jsonbody
from tokenplane.serving.errors import (
    InvalidRequest,
    MethodNotAllowed,
    NotFound,
    RequestTimeout,
    RequestTooLarge,
    ServingError,
)
from tokenplane.serving.files import store as files
from tokenplane.serving.gateway import requests

log = logging.getLogger(__name__)

MAX_BODY_BYTES = requests.MAX_BODY_BYTES
# A batch input file's upload: the file store's limit plus room for the multipart framing. Starlette
# spools the parts to a temporary file, so this bounds disk and time; the route checks the file itself.
MAX_UPLOAD_BODY_BYTES = files.MAX_UPLOAD_BYTES + 1024 * 1024
UPLOAD_PATH = "/v1/files"
# A whole request body must arrive within this; a client that sends a byte a second is cut off.
BODY_READ_TIMEOUT_S = 60.0
# A body declared at most this much over its limit is read and dropped before the 413, so that an
# ordinary client (which sends the whole body before it reads) sees the 413 and not a reset. Anything
# larger is refused at once and the connection closed: memory stays flat either way, this bounds time.
DRAIN_BYTES = 8 * 1024 * 1024


class InternalError(ServingError):
    """A failure the gateway did not foresee; the client gets the request id, the log gets the rest."""

    code = "internal_error"
    public_message = "The gateway failed on this request; it has been logged."


def body_limit(path: str) -> int:
    """The largest body accepted on ``path``."""
    return MAX_UPLOAD_BODY_BYTES if path.rstrip("/") == UPLOAD_PATH else MAX_BODY_BYTES


def json_body(path: str) -> bool:
    """Whether a body sent to ``path`` is JSON, metered for its decode cost as it arrives: every route's but
    the file upload's (multipart, whose file is checked line by line off the event loop)."""
    return path.rstrip("/") != UPLOAD_PATH


def error_json(
    error: ServingError, *, request_id: str | None = None, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """The one place a ``ServingError`` becomes what a client outside the platform sees.

    A server-side failure's details (upstream URLs, secret references, exception names) are logged
    with the request id; the client gets ``public_message`` and the id.
    """
    if error.public_message is not None:
        log.warning("request %s failed (%s): %s", request_id or "-", error.code, error.message)
    out = {**(headers or {}), **error.headers}
    if request_id:
        out["x-request-id"] = request_id
    return JSONResponse(error.public_body(request_id), status_code=error.status, headers=out)


class BodyLimit:
    """ASGI middleware: a request body over ``limit_for(path)`` bytes gets a 413 without being read whole, and
    a JSON body (``metered(path)``) past the decode bounds a 400 at the chunk that crosses them."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        limit_for: Callable[[str], int] = body_limit,
        metered: Callable[[str], bool] = json_body,
        timeout_s: float = BODY_READ_TIMEOUT_S,
    ) -> None:
        self.app = app
        self.limit_for = limit_for
        self.metered = metered
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            if declared <= limit + DRAIN_BYTES:
                await _drain(receive, self.timeout_s)
            await _refuse(RequestTooLarge(_too_large(declared, limit)), scope, receive, send)
            return
        started = False
        cut_off = False  # the body was refused part-way: whoever answers, the connection must close
        received = 0
        body_done = False
        meter = jsonbody.CostMeter() if self.metered(scope["path"]) else None
        deadline = asyncio.get_running_loop().time() + self.timeout_s

        async def limited_receive() -> Message:
            nonlocal received, body_done, cut_off
            if body_done:  # after the body, receive() only waits for a disconnect: no limit applies
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                cut_off = True
                raise RequestTimeout(
                    f"the request body did not arrive within {self.timeout_s:.0f} s; send it at once"
                ) from None
            if message["type"] == "http.request":
                chunk = message.get("body", b"")
                received += len(chunk)
                if received > limit:
                    cut_off = True
                    raise RequestTooLarge(_too_large(received, limit, so_far=True))
                if meter is not None:
                    try:
                        meter.feed(chunk)
                    except jsonbody.BadJson as e:
                        cut_off = True
                        raise requests.not_json(e) from e
                body_done = not message.get("more_body", False)
            else:
                body_done = True
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if cut_off:  # the unread rest of the body is never drained: close instead
                    message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, limited_receive, tracked_send)
        except (RequestTooLarge, RequestTimeout, InvalidRequest) as e:
            if started or not cut_off:
                raise
            await _refuse(e, scope, receive, send)


def _too_large(size: int, limit: int, *, so_far: bool = False) -> str:
    more = "more than " if so_far else ""
    return (
        f"the request body is {more}{size} bytes; the limit is {limit} bytes. "
        "Shorten the prompt, or upload large inputs as a batch file"
    )


async def _drain(receive: Receive, timeout_s: float) -> None:
    """Read a body to its end and drop it (bounded by the caller's check of its declared length)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout_s):
            while True:
                message = await receive()
                if message["type"] != "http.request" or not message.get("more_body", False):
                    return


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the HTTP parser has refused a malformed length already; count the bytes instead
    return None


async def _refuse(error: ServingError, scope: Scope, receive: Receive, send: Send) -> None:
    # connection: close, since the rest of the body may still be on its way and is never read.
    response = error_json(error, headers={"connection": "close"})
    await response(scope, receive, send)


async def _http_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, HTTPException) and exc.status_code == 404:
        return error_json(NotFound(f"no route {request.method} {request.url.path}; see the OpenAI API reference"))
    if isinstance(exc, HTTPException) and exc.status_code == 405:
        return error_json(MethodNotAllowed(f"{request.method} is not allowed on {request.url.path}"))
    if isinstance(exc, HTTPException) and 400 <= exc.status_code < 500:
        error = InvalidRequest(str(exc.detail))
        return JSONResponse(error.public_body(), status_code=exc.status_code)
    if isinstance(exc, ServingError):
        return error_json(exc)
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_json(InternalError(f"{type(exc).__name__}: {exc}"))


EXCEPTION_HANDLERS: Mapping[Any, Callable[[Request, Exception], Any]] = {
    HTTPException: _http_error,
    Exception: _http_error,
}


def public_app(
    routes: Sequence[BaseRoute] = (),
    *,
    lifespan: Callable[[Starlette], AbstractAsyncContextManager[None]] | None = None,
) -> Starlette:
    """A Starlette app with the edge's limits and error handlers around ``routes``."""
    app = Starlette(
        routes=list(routes),
        middleware=[Middleware(BodyLimit)],
        exception_handlers=dict(EXCEPTION_HANDLERS),
        lifespan=lifespan,
    )
    app.router.redirect_slashes = False
    return app
