"""A stream's body is closed the moment its response ends, however it ends: its ``finally`` is the metering."""

from __future__ import annotations

from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import pytest
from starlette.requests import ClientDisconnect
from starlette.responses import StreamingResponse

from tokenplane.serving.gateway.streams import ClosingStreamingResponse, with_keepalive


class Body:
    """A stream body that records whether its ``finally`` (where the gateway meters) has run."""

    def __init__(self) -> None:
        self.closed = False

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            for i in range(1000):
                yield b"data: %d\n\n" % i
        finally:
            self.closed = True


async def cut_after_first_chunk(response_type: type[StreamingResponse], body: Body) -> None:
    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.body" and sent:
            raise OSError("the client closed the connection")  # what uvicorn's send does after a cut
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    response = response_type(with_keepalive(body.chunks()), media_type="text/event-stream")
    scope = {"type": "http", "asgi": {"spec_version": "2.4"}, "method": "POST", "path": "/", "headers": []}
    with pytest.raises(ClientDisconnect):
        await response(scope, receive, send)


async def test_a_cut_stream_closes_its_body_before_the_response_returns() -> None:
    body = Body()
    await cut_after_first_chunk(ClosingStreamingResponse, body)
    assert body.closed


async def test_starlettes_own_response_leaves_the_body_of_a_cut_stream_open() -> None:
    """The defect put back: the body's ``finally`` waits for the garbage collector (it was never metered)."""
    body = Body()
    await cut_after_first_chunk(StreamingResponse, body)
    assert not body.closed
