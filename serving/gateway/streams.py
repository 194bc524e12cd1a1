"""Server-sent events exactly as OpenAI sends them, and the bookkeeping around a stream.

A stream's headers go out as soon as the request is admitted, before the first
token exists, so a load balancer's idle timer never sees a silent connection.
While the first token is still being computed, SSE comments (``: keep-alive``),
which clients ignore, keep the connection warm.

``ClosingStreamingResponse`` closes its body however the response ends. When
a client cuts a stream, uvicorn's next ``send`` raises and Starlette leaves
the body's generators suspended; their ``finally`` blocks (the usage event,
the rate-limit settlement, the admission permit) then waited for the garbage
collector, and a cut stream was billed never or much later.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from tokenplane.serving import jsonbody, responses_api
from tokenplane.serving.errors import ServingError, UpstreamStreamBroken
from tokenplane.serving.types import Json

log = logging.getLogger(__name__)

KEEPALIVE_SECONDS = 5.0  # well under the 60 s idle timeout of the common load balancers
DONE = b"data: [DONE]\n\n"
KEEPALIVE = b": keep-alive\n\n"


def event(data: Json) -> bytes:
    return b"data: " + jsonbody.dumps(data) + b"\n\n"


def error_event(error: ServingError, *, request_id: str | None = None) -> bytes:
    """The last event of a broken stream, as the public edge tells it (details go to the log)."""
    if error.public_message is not None:
        log.warning("request %s: stream ended by %s: %s", request_id or "-", error.code, error.message)
    return event(error.public_body(request_id))


def client_view(chunk: Json, *, include_usage: bool) -> Json | None:
    """What the client sees of an upstream chunk: the usage chunk only when it asked for it."""
    if include_usage or "usage" not in chunk or chunk.get("usage") is None:
        return chunk
    if not chunk.get("choices"):
        return None
    return {k: v for k, v in chunk.items() if k != "usage"}


async def sse(
    chunks: AsyncIterator[Json], *, include_usage: bool, request_id: str | None = None
) -> AsyncIterator[bytes]:
    """Encode chunks as SSE and end with ``[DONE]``, or with an error event if the stream breaks."""
    try:
        async for chunk in chunks:
            view = client_view(chunk, include_usage=include_usage)
            if view is not None:
                yield event(view)
        yield DONE
    except ServingError as e:
        yield error_event(e, request_id=request_id)
    except Exception as e:  # a bug must still end the stream with an error event, never a silent cut
        log.exception("request %s: the stream failed", request_id or "-")
        yield error_event(UpstreamStreamBroken(f"the stream failed: {type(e).__name__}: {e}"), request_id=request_id)
    finally:
        await _close(chunks)


def response_error_event(error: ServingError, *, sequence: int, request_id: str | None = None) -> bytes:
    """A broken Responses stream's last event: ``error``, with the fields of the API's error event."""
    if error.public_message is not None:
        log.warning("request %s: stream ended by %s: %s", request_id or "-", error.code, error.message)
    public = error.public_body(request_id)["error"]
    fields = {k: public.get(k) for k in ("code", "message", "param")}
    return responses_api.sse({"type": responses_api.ERROR, **fields, "sequence_number": sequence})


async def response_sse(chunks: AsyncIterator[Json], *, request_id: str | None = None) -> AsyncIterator[bytes]:
    """Encode Responses API events as its SSE (``event:`` and ``data:``); it has no ``[DONE]``: the
    terminal event ends it, and a stream that breaks ends with an ``error`` event instead."""
    sequence = 0
    try:
        async for chunk in chunks:
            number = chunk.get("sequence_number")
            sequence = number + 1 if isinstance(number, int) else sequence + 1
            yield responses_api.sse(chunk)
    except ServingError as e:
        yield response_error_event(e, sequence=sequence, request_id=request_id)
    except Exception as e:  # a bug must still end the stream with an error event, never a silent cut
        log.exception("request %s: the stream failed", request_id or "-")
        broken = UpstreamStreamBroken(f"the stream failed: {type(e).__name__}: {e}")
        yield response_error_event(broken, sequence=sequence, request_id=request_id)
    finally:
        await _close(chunks)


async def _close(iterator: object) -> None:
    close = getattr(iterator, "aclose", None)
    if close is not None:
        await close()


async def with_keepalive(body: AsyncIterator[bytes], *, interval: float = KEEPALIVE_SECONDS) -> AsyncIterator[bytes]:
    """Interleave ``: keep-alive`` comments whenever ``body`` is silent for ``interval`` seconds."""
    iterator = aiter(body)
    pending: asyncio.Task[bytes] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(iterator))
            done, _ = await asyncio.wait({pending}, timeout=interval)
            if not done:
                yield KEEPALIVE
                continue
            try:
                item = pending.result()
            except StopAsyncIteration:
                return
            pending = None
            yield item
    finally:
        # The generator below is running inside ``pending``: it must stop before it can be closed. A
        # cancelled response cancels this frame again at its next await, so the rest runs in a task of its
        # own, held here until done: its ``finally`` blocks are the stream's metering and settlement.
        if pending is not None and not pending.done():
            pending.cancel()
        await _detached(_stop_then_close(pending, iterator))


async def _stop_then_close(pending: asyncio.Future[bytes] | None, iterator: object) -> None:
    if pending is not None:
        await asyncio.gather(pending, return_exceptions=True)
    await _close(iterator)


# Closings still running after their response ended: the loop holds tasks only weakly, and a collected
# task would never run the ``finally`` blocks (the usage event) it was started for.
_CLOSING: set[asyncio.Task[None]] = set()


async def _detached(work: Coroutine[Any, Any, None], on_done: Callable[[], None] | None = None) -> None:
    """Run ``work`` to its end even if the caller is cancelled meanwhile (the caller still sees the cancel).

    ``on_done`` runs when ``work`` has ended, which may be after the caller has been cancelled.
    """
    task = asyncio.ensure_future(work)
    _CLOSING.add(task)
    task.add_done_callback(_CLOSING.discard)
    if on_done is not None:
        task.add_done_callback(lambda _: on_done())
    await asyncio.shield(task)


async def closings_done(timeout: float) -> int:
    """Wait for the closings still running (each a stream's metering), or ``timeout`` seconds; return how
    many had not ended.

    A stopping server's cancellation reaches a stream inside Starlette's task group, which cancels every
    await again: ``with_keepalive``'s wait for its detached close is cut short, so the response (and the
    ``Drain``) count the stream out while its metering still runs here.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while _CLOSING and loop.time() < deadline:
        await asyncio.wait(set(_CLOSING), timeout=deadline - loop.time())
    return len(_CLOSING)


class ClosingStreamingResponse(StreamingResponse):
    """A ``StreamingResponse`` that closes its body iterator once, however the response ends.

    The close is detached from the response's task, so that a cancellation of the response (the
    client left, or a stopping server's drain ran out) cannot cut short the work the body does when it
    closes. ``on_closed`` runs once that work is done (the gateway's ``Drain`` counts the stream out).
    """

    def __init__(self, *args: Any, on_closed: Callable[[], None] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._on_closed = on_closed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await _detached(_close(self.body_iterator), self._on_closed)


def cacheable(body: Json) -> bool:
    """Whether a whole response may be cached: a completion with choices, or a finished text response."""
    if body.get("object") == responses_api.OBJECT:
        return responses_api.cacheable(body)
    return bool(body.get("choices"))


def assemble(chunks: list[Json]) -> Json | None:
    """A whole chat.completion, text_completion or response from its stream chunks (for the caches)."""
    if not chunks:
        return None
    head = chunks[0]
    if "type" in head:  # a Responses API stream: its last event holds the whole response
        whole = responses_api.from_events(chunks)
        return whole if whole is not None and responses_api.cacheable(whole) else None
    chat = head.get("object") == "chat.completion.chunk"
    text: list[str] = []
    finish: str | None = None
    usage: Any = None
    for chunk in chunks:
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            piece = (choice.get("delta") or {}).get("content") if chat else choice.get("text")
            if piece:
                text.append(piece)
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
    if finish is None:
        return None  # an unfinished stream is never cached
    content = "".join(text)
    choice_out: Json
    if chat:
        choice_out = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}
    else:
        choice_out = {"index": 0, "text": content, "finish_reason": finish}
    return {
        "id": head.get("id", ""),
        "object": "chat.completion" if chat else "text_completion",
        "created": head.get("created", 0),
        "model": head.get("model", ""),
        "choices": [choice_out],
        "usage": usage,
    }
