"""A self-hosted pool's replica: vLLM's OpenAI API over the gateway's one pooled aiohttp session."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import aiohttp

from tokenplane.serving import jsonbody, responses_api
from tokenplane.serving.errors import UpstreamError, UpstreamTimeout
from tokenplane.serving.modelgw.headers import forwarded
from tokenplane.serving.modelgw.providers.base import ProviderCall, status_error
from tokenplane.serving.types import Endpoint, Json

SSE_DONE = b"[DONE]"


class VllmProvider:
    """Replicas of the pools, reached at ``ProviderCall.url``.

    Args:
        session: The shared session: its connector keeps connections to the replicas alive.
    """

    endpoints = frozenset(Endpoint)

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self._session = session

    def _body(self, call: ProviderCall, *, stream: bool) -> Json:
        body = {**call.body, "model": call.model, "stream": stream}
        # A tenant's level comes from the gateway, never from the client's body: a client-sent priority would
        # jump the queue (or, on a first-come-first-served replica, be refused by vLLM).
        body.pop("priority", None)
        if call.priority is not None:
            body["priority"] = call.priority
        if stream and call.endpoint is not Endpoint.RESPONSES:
            # Usage must be known for metering even when the client did not ask for it (a Responses
            # stream always ends with it, and vLLM's Responses request has no such option).
            body["stream_options"] = {**(call.body.get("stream_options") or {}), "include_usage": True}
        elif call.endpoint is not Endpoint.RESPONSES:
            body.pop("stream_options", None)
        return body

    def _payload(self, call: ProviderCall, *, stream: bool) -> bytes:
        """The bytes to send: the parsed body with the fields set (``_body``), or, for a body the model
        gateway did not parse (``call.raw``), its bytes with the fields appended: JSON parsers keep a
        repeated key's last value (vLLM's, Python's and orjson's alike), so they override the client's."""
        if call.raw is None:
            return jsonbody.dumps(self._body(call, stream=stream))
        fields: Json = {"model": call.model, "stream": stream}
        if call.priority is not None:
            fields["priority"] = call.priority
        if stream and call.endpoint is not Endpoint.RESPONSES:
            fields["stream_options"] = {"include_usage": True}  # the raw body has none (modelgw.app.forwardable)
        return appended(call.raw, fields)

    def _url(self, call: ProviderCall) -> str:
        if call.url is None:
            raise ValueError(f"{call.target} has no replica URL; the gateway chooses one before calling")
        return call.url + call.endpoint.value

    @staticmethod
    def _headers(call: ProviderCall) -> dict[str, str]:
        return {"x-request-id": call.request_id, "content-type": "application/json"}

    async def complete(self, call: ProviderCall) -> Json:
        where = f"{call.target} at {call.url}"
        try:
            async with self._session.post(
                self._url(call), data=self._payload(call, stream=False), headers=self._headers(call)
            ) as response:
                raw = await response.read()
                if response.status >= 400:
                    raise status_error(where, response.status, raw)
                body: Json = jsonbody.loads_internal(raw)
                call.forwarded.update(forwarded(response.headers))
                return body
        except (aiohttp.ServerTimeoutError, TimeoutError) as e:
            raise UpstreamTimeout(f"{where} timed out") from e
        except (aiohttp.ClientError, ValueError) as e:
            raise UpstreamError(f"{where} failed: {type(e).__name__}: {e}") from e

    async def stream(self, call: ProviderCall) -> AsyncGenerator[Json, None]:
        where = f"{call.target} at {call.url}"
        response: aiohttp.ClientResponse | None = None
        finished = False
        try:
            response = await self._session.post(
                self._url(call), data=self._payload(call, stream=True), headers=self._headers(call)
            )
            if response.status >= 400:
                raise status_error(where, response.status, await response.read())
            ended = False  # a Responses stream has no [DONE]: its terminal event is the end
            async for data in sse_data(response.content):
                if data == SSE_DONE:
                    finished = True
                    return
                chunk = jsonbody.loads_internal(data)
                if isinstance(chunk, dict) and ("error" in chunk or responses_api.is_error(chunk)):
                    # vLLM reports a failed generation in-band
                    raise UpstreamError(f"{where} sent an error event: {chunk.get('error') or chunk}")
                ended = responses_api.is_terminal(chunk)
                yield chunk
            if ended:
                finished = True
                return
            raise UpstreamError(f"{where} ended the stream before [DONE]")
        except (aiohttp.ServerTimeoutError, TimeoutError) as e:
            raise UpstreamTimeout(f"{where} timed out") from e
        except (aiohttp.ClientError, ValueError) as e:
            raise UpstreamError(f"{where} failed: {type(e).__name__}: {e}") from e
        finally:
            if response is not None:
                if finished:
                    response.release()  # the connection goes back to the pool
                else:
                    # Closing the connection is how the engine learns the client is gone and aborts.
                    response.close()

    async def aclose(self) -> None:
        """The session is the caller's; nothing of its own to close."""


async def sse_data(content: aiohttp.StreamReader) -> AsyncGenerator[bytes, None]:
    """The ``data`` of each server-sent event (multi-line data joined with newlines); comments skipped."""
    lines: list[bytes] = []
    async for raw in content:
        line = raw.rstrip(b"\r\n")
        if not line:
            if lines:
                yield b"\n".join(lines)
                lines = []
        elif line.startswith(b"data:"):
            lines.append(line[5:].removeprefix(b" "))
    if lines:
        yield b"\n".join(lines)


def appended(raw: bytes, fields: Json) -> bytes:
    """``raw``, the text of one JSON object, with ``fields`` added at its end (one copy, no decode)."""
    head = raw.rstrip()[:-1].rstrip()  # without the closing brace
    tail = jsonbody.dumps(fields)[1:]  # '"model":...}', the fields and the closing brace
    return head + (tail if head.endswith(b"{") else b"," + tail)
