"""``HttpUpstream``: the AI gateway's side of the HTTP boundary to a remote model gateway.

Each request goes to the next of the model gateway's processes in turn (``serving.modelgw.peers``); one that
cannot be connected to (gone since the last lookup) is passed over for the next, since nothing was sent.

It sends the chain and the request's context as ``x-tokenplane-*`` headers,
and turns the model gateway's answers back into what ``FailoverUpstream`` itself
would have returned or raised: error JSON becomes the matching
``serving.errors`` class, and an SSE error event (or a stream that stops
without ``[DONE]``) becomes ``UpstreamStreamBroken``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator

import aiohttp

from tokenplane.serving import jsonbody
from tokenplane.serving.errors import (
    ServingError,
    UpstreamError,
    UpstreamRejected,
    UpstreamStreamBroken,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from tokenplane.serving.modelgw import headers as h
from tokenplane.serving.modelgw.headers import forwarded
from tokenplane.serving.modelgw.peers import PeerDealer
from tokenplane.serving.modelgw.providers.vllm import SSE_DONE, appended, sse_data
from tokenplane.serving.types import Clock, Completion, Json, SystemClock, Target, UpstreamRequest, format_targets

# The model gateway enforces the deadline itself; this margin only keeps a caller from hanging on
# a model gateway that died without closing the connection.
DEADLINE_GRACE_S = 5.0
CONNECT_TIMEOUT_S = 5.0  # an in-cluster Service connects in milliseconds; seconds mean it is gone

_BY_CODE: dict[str, type[UpstreamError]] = {
    "upstream_unavailable": UpstreamUnavailable,
    "upstream_timeout": UpstreamTimeout,
    "stream_interrupted": UpstreamStreamBroken,
    "upstream_error": UpstreamError,
}


def error_from_response(status: int, raw: bytes) -> ServingError:
    """The ``serving.errors`` instance an error response from the model gateway stands for."""
    try:
        body = json.loads(raw)
        error = body["error"]
        message = str(error.get("message") or "")
        code = error.get("code")
    except (ValueError, KeyError, TypeError, AttributeError):
        text = raw.decode(errors="replace")[:500]
        return UpstreamError(f"the model gateway answered HTTP {status}: {text}")
    if code in _BY_CODE:
        return _BY_CODE[code](message)
    if 400 <= status < 500:  # the request itself was refused (by an upstream or by the model gateway)
        return UpstreamRejected(message, status=status, body=body)
    return UpstreamError(message)


class HttpStream:
    """``serving.types.CompletionStream`` over the model gateway's SSE response."""

    def __init__(self, response: aiohttp.ClientResponse, first: Json, events: AsyncGenerator[Json, None]) -> None:
        self.served_by = Target.parse(response.headers[h.SERVED_BY])
        self.attempts = int(response.headers.get(h.ATTEMPTS, "1"))
        self._response = response
        self._first: Json | None = first
        self._events = events

    async def __aiter__(self) -> AsyncIterator[Json]:
        try:
            if self._first is not None:
                first, self._first = self._first, None
                yield first
            async for chunk in self._events:
                yield chunk
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP response; the model gateway sees the disconnect and cancels upstream."""
        await self._events.aclose()
        self._response.close()


class HttpUpstream:
    """``serving.types.Upstream`` over HTTP to a model gateway.

    Args:
        base_url: The model gateway's base URL; in Kubernetes its headless Service's, e.g.
            ``http://model-gateway-peers.gateway.svc:8080``, whose processes the requests are dealt over.
        session: A shared aiohttp session; the caller closes it.
        clock: Turns the request's monotonic deadline into milliseconds left.
        peers: Deals the requests over the processes; by default one reading ``base_url``.
    """

    def __init__(
        self,
        base_url: str,
        *,
        session: aiohttp.ClientSession,
        clock: Clock | None = None,
        peers: PeerDealer | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._session = session
        self._clock = clock or SystemClock()
        self.peers = peers or PeerDealer(self.base_url)

    def _headers(self, request: UpstreamRequest, *, stream: bool) -> dict[str, str]:
        left = max(0.0, request.deadline - self._clock.monotonic())
        return {
            h.TARGETS: format_targets(request.targets),
            h.REQUEST_ID: request.request_id,
            h.TENANT: request.tenant,
            h.PRIORITY: request.priority.value,
            h.DEADLINE_MS: f"{left * 1000:.0f}",
            h.AFFINITY: request.affinity_key,
            h.TOKENS: str(request.estimated_tokens),
            h.STREAM: "1" if stream else "0",  # with the body below, the model gateway need not parse it
            "content-type": "application/json",
        }

    def _timeout(self, request: UpstreamRequest) -> aiohttp.ClientTimeout:
        left = max(0.0, request.deadline - self._clock.monotonic())
        # sock_read bounds each wait for bytes, so a stream may run past the deadline once it has started.
        return aiohttp.ClientTimeout(total=None, connect=CONNECT_TIMEOUT_S, sock_read=left + DEADLINE_GRACE_S)

    async def _post(self, request: UpstreamRequest, *, stream: bool) -> aiohttp.ClientResponse:
        data, headers = to_model_gateway(request, stream=stream), self._headers(request, stream=stream)
        urls = await self.peers.next_urls()
        for i, url in enumerate(urls):
            try:
                return await self._session.post(
                    url + request.endpoint.value, data=data, headers=headers, timeout=self._timeout(request)
                )
            except aiohttp.ClientConnectorError as e:
                if i + 1 < len(urls):  # not connected, nothing sent: the next process takes it
                    continue
                raise UpstreamUnavailable(f"the model gateway at {self.base_url} is unreachable: {e}") from e
            except aiohttp.ClientError as e:
                raise UpstreamUnavailable(f"the model gateway at {url} is unreachable: {e}") from e
            except TimeoutError as e:
                raise UpstreamTimeout(f"the model gateway at {url} did not answer in time") from e
        raise AssertionError("next_urls always returns at least one URL")

    async def complete(self, request: UpstreamRequest) -> Completion:
        """Send the request and wait for the whole response."""
        response = await self._post(request, stream=False)
        try:
            raw = await response.read()
        except (aiohttp.ClientError, TimeoutError) as e:
            raise UpstreamError(f"the model gateway at {self.base_url} broke the response: {e}") from e
        finally:
            response.release()
        if response.status >= 400:
            raise error_from_response(response.status, raw)
        return Completion(
            body=jsonbody.loads_internal(raw),
            served_by=Target.parse(response.headers[h.SERVED_BY]),
            attempts=int(response.headers.get(h.ATTEMPTS, "1")),
            headers=forwarded(response.headers),
        )

    async def stream(self, request: UpstreamRequest) -> HttpStream:
        """Send the request; return once the first chunk is here (the model gateway sends headers only then)."""
        response = await self._post(request, stream=True)
        try:
            if response.status >= 400:
                raise error_from_response(response.status, await response.read())
            events = _chunks(response, self.base_url)
            try:
                first = await anext(events)
            except StopAsyncIteration:
                raise UpstreamStreamBroken(f"the model gateway at {self.base_url} sent an empty stream") from None
            except UpstreamStreamBroken as e:
                # Broken before any chunk reached us: nothing was sent on, so it reads as a failed attempt.
                raise UpstreamError(e.message) from e
        except BaseException:
            response.close()
            raise
        return HttpStream(response, first, events)

    async def aclose(self) -> None:
        """Stop reading the processes' addresses; the session is the caller's."""
        await self.peers.aclose()


def to_model_gateway(request: UpstreamRequest, *, stream: bool) -> bytes:
    """The bytes to send: the client's (``request.raw``, which names neither ``priority`` nor
    ``stream_options``) with ``stream`` appended, or else ``body`` encoded (``for_model_gateway``). The
    largest body the bounds admit took ~1 ms to encode, on the event loop, for the bytes the client sent."""
    if request.raw is not None:
        return appended(request.raw, {"stream": stream})
    return jsonbody.dumps(for_model_gateway(request.body, stream=stream))


def for_model_gateway(body: Json, *, stream: bool) -> Json:
    """The body as the model gateway takes it: without what it sets itself (a tenant's ``priority`` comes
    from the gateway, never the client; usage is always asked for), so that it can forward it unparsed."""
    sent = {k: v for k, v in body.items() if k != "priority"}
    options = sent.get("stream_options")
    if isinstance(options, dict) and set(options) <= {"include_usage"}:
        del sent["stream_options"]  # the model gateway asks for the usage; the AI gateway shows it or not
    sent["stream"] = stream
    return sent


async def _chunks(response: aiohttp.ClientResponse, where: str) -> AsyncGenerator[Json, None]:
    try:
        async for data in sse_data(response.content):
            if data == SSE_DONE:
                return
            event = jsonbody.loads_internal(data)
            if "error" in event:
                error = event["error"] or {}
                raise UpstreamStreamBroken(str(error.get("message") or "the stream failed"))
            yield event
    except (aiohttp.ClientError, TimeoutError, ValueError) as e:
        raise UpstreamStreamBroken(f"the stream from the model gateway at {where} broke: {e}") from e
    raise UpstreamStreamBroken(f"the stream from the model gateway at {where} ended without [DONE]")
