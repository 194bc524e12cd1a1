"""The model gateway's HTTP face: OpenAI's routes plus the chain the AI gateway chose, in headers.

Request headers (``serving.modelgw.headers``): ``x-tokenplane-targets`` (the
failover chain, required), ``-request-id``, ``-tenant``, ``-priority``,
``-deadline-ms`` (milliseconds left), ``-affinity`` and ``-estimated-tokens``
(the AI gateway's estimate of prompt + output tokens: the balancer's load,
counted once, where the request entered; without it, ``ROLLOUT_TOKENS``) and ``-stream`` (whether
the body streams: with it, a pool gets the body's bytes undecoded, see ``forwardable``). Responses carry
``x-tokenplane-served-by`` and ``x-tokenplane-attempts``.

Errors before a response starts are OpenAI's error JSON with the error's
status. A stream is SSE exactly as OpenAI sends it; if it breaks after its
first chunk, the last event is ``data: {"error": {...}}`` and no ``[DONE]``,
so no client mistakes a cut for an end.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from tokenplane.serving import jsonbody
from tokenplane.serving.errors import InvalidRequest, ServingError
from tokenplane.serving.modelgw import headers as h
from tokenplane.serving.modelgw.gateway import FailoverUpstream
from tokenplane.serving.modelgw.stream import GatewayStream
from tokenplane.serving.tokens import DEFAULT_MAX_TOKENS
from tokenplane.serving.types import Completion, Endpoint, Json, UpstreamRequest, parse_targets
from tokenplane.spec import Priority

T = TypeVar("T")

DEFAULT_DEADLINE_S = 300.0  # when the caller sends no deadline: the longest a chat request may reasonably take
MAX_BODY_BYTES = 16 * 1024 * 1024  # a 128k-token prompt is about 0.5 MB; this leaves room for images as data URLs


ROLLOUT_TOKENS = DEFAULT_MAX_TOKENS  # the load of a request that carries no estimate (a previous-release caller)


def _event(data: Json) -> bytes:
    return b"data: " + jsonbody.dumps(data) + b"\n\n"


DONE = b"data: [DONE]\n\n"


def _error_response(error: ServingError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers)


def forwardable(raw: bytes) -> bool:
    """Whether a body can go to a pool unparsed, with the model gateway's fields appended (``providers.vllm``).

    It must be one JSON object, and hold no field the model gateway sets by merging or removing
    (``priority``, ``stream_options``); the AI gateway leaves those out, so only a body whose text
    happens to name them is parsed. The test is two substring searches, at memory speed.
    """
    text = raw.strip()
    return (
        text.startswith(b"{") and text.endswith(b"}") and b'"priority"' not in text and b'"stream_options"' not in text
    )


async def _read_request(
    request: Request, endpoint: Endpoint, gateway: FailoverUpstream
) -> tuple[UpstreamRequest, bool]:
    """The request and whether it streams.

    The AI gateway has validated and serialized the body (bounded in cost: ``serving.jsonbody``) and says in
    ``x-tokenplane-stream`` whether it streams; such a body is not decoded again on this event loop: a
    pool gets its bytes (``UpstreamRequest.raw``), and only a provider's SDK call parses it. A caller that
    does not send the header (a previous release) has its body parsed and checked here, as before.
    """
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise InvalidRequest(f"the body is {len(raw)} bytes; at most {MAX_BODY_BYTES} are accepted")
    asked = request.headers.get(h.STREAM)
    unparsed: bytes | None = None
    if asked in ("0", "1") and forwardable(raw):
        body: Json = {}
        unparsed = raw
        stream = asked == "1"
    else:
        try:
            body = jsonbody.loads_forwarded(raw)  # the AI gateway's "stream" is one value past its own bound
        except jsonbody.BadJson as e:
            raise InvalidRequest(f"the body is not valid JSON: {e}", code="invalid_json") from e
        if not isinstance(body, dict):
            raise InvalidRequest("the body must be a JSON object")
        stream = bool(body.get("stream"))
    chain = request.headers.get(h.TARGETS)
    if not chain:
        raise InvalidRequest(
            f"header {h.TARGETS} is required: the failover chain, e.g. pool:small@small,provider:openai@small"
        )
    # An AI gateway of the previous release sends no estimate while a rollout replaces both Deployments:
    # its requests count one default output budget each, for that window, rather than failing.
    tokens = request.headers.get(h.TOKENS, str(ROLLOUT_TOKENS))
    if not (tokens.isascii() and tokens.isdigit()):
        raise InvalidRequest(
            f"header {h.TOKENS}={tokens!r} must be a whole number of tokens: the AI gateway's estimate of the "
            "prompt plus the output budget, e.g. 1124"
        )
    try:
        targets = parse_targets(chain)
        priority = Priority(request.headers.get(h.PRIORITY, Priority.NORMAL.value))
        left_ms = float(request.headers.get(h.DEADLINE_MS, DEFAULT_DEADLINE_S * 1000))
    except ValueError as e:
        raise InvalidRequest(f"bad x-tokenplane-* header: {e}") from e
    if not targets:
        raise InvalidRequest(f"header {h.TARGETS} names no target")
    upstream = UpstreamRequest(
        endpoint=endpoint,
        body=body,
        targets=targets,
        request_id=request.headers.get(h.REQUEST_ID) or uuid.uuid4().hex,
        tenant=request.headers.get(h.TENANT, ""),
        priority=priority,
        deadline=gateway.clock.monotonic() + left_ms / 1000,
        affinity_key=request.headers.get(h.AFFINITY, ""),
        estimated_tokens=int(tokens),
        raw=unparsed,
    )
    return upstream, stream


async def _unless_disconnected(request: Request, work: Awaitable[T]) -> T | None:
    """Run ``work`` while watching the connection; cancel it (and its upstream request) if the client leaves."""
    task = asyncio.ensure_future(work)

    async def gone() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(gone())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    if task.cancelled():
        return None
    return task.result()


async def _sse(stream: GatewayStream) -> AsyncIterator[bytes]:
    try:
        async for chunk in stream:
            yield _event(chunk)
        yield DONE
    except ServingError as e:
        yield _event(e.body())
    finally:
        # Also on a client disconnect, when Starlette cancels this generator: the upstream must stop too.
        await stream.aclose()


def create_app(gateway: FailoverUpstream, *, registry: CollectorRegistry) -> Starlette:
    """The model gateway's ASGI app.

    Args:
        gateway: Walks the chains; whoever built it closes it.
        registry: Served at ``/metrics`` (the gateway's metrics should be registered on it).
    """

    async def serve(request: Request, endpoint: Endpoint) -> Response:
        try:
            upstream, streams = await _read_request(request, endpoint, gateway)
            if streams and endpoint is not Endpoint.EMBEDDINGS:
                stream = await _unless_disconnected(request, gateway.stream(upstream))
                if stream is None:
                    return Response(status_code=499)  # nobody is listening; the status is for the logs
                return StreamingResponse(_sse(stream), media_type="text/event-stream", headers=_served(stream))
            completion = await _unless_disconnected(request, gateway.complete(upstream))
        except ServingError as e:
            return _error_response(e)
        if completion is None:
            return Response(status_code=499)
        return JSONResponse(completion.body, headers=_served(completion))

    async def chat(request: Request) -> Response:
        return await serve(request, Endpoint.CHAT)

    async def completions(request: Request) -> Response:
        return await serve(request, Endpoint.COMPLETIONS)

    async def embeddings(request: Request) -> Response:
        return await serve(request, Endpoint.EMBEDDINGS)

    async def responses(request: Request) -> Response:
        return await serve(request, Endpoint.RESPONSES)

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(request: Request) -> Response:
        pools = [name for name, pool in gateway.config.pools.items() if pool.replicas]
        providers = [name for name, p in gateway.config.providers.items() if p.api_key]
        if not pools and not providers:
            return JSONResponse({"ready": False, "reason": "no pool has replicas here and no provider has a key"}, 503)
        return JSONResponse({"ready": True, "pools": pools, "providers": providers})

    async def metrics(request: Request) -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return Starlette(
        routes=[
            Route(Endpoint.CHAT.value, chat, methods=["POST"]),
            Route(Endpoint.COMPLETIONS.value, completions, methods=["POST"]),
            Route(Endpoint.EMBEDDINGS.value, embeddings, methods=["POST"]),
            Route(Endpoint.RESPONSES.value, responses, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
        ]
    )


def _served(result: GatewayStream | Completion) -> dict[str, str]:
    served = {h.SERVED_BY: str(result.served_by), h.ATTEMPTS: str(result.attempts)}
    return served | result.headers if isinstance(result, Completion) else served
