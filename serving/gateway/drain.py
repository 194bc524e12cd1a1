"""The requests a stopping gateway must finish metering before its event sink closes.

On SIGTERM uvicorn stops accepting, lets the responses in flight finish (a
stream runs to its end), and after ``server.DRAIN_TIMEOUT_S`` cancels what is
still running; then the app's lifespan ends and the Kafka sink closes. A
request's usage event is published on its way out, after its rate-limit
settlement, so a cancelled request is still metering for a moment after the
cancel, and a stream's metering runs in a closing task of its own
(``streams.ClosingStreamingResponse``). An event published once the sink has
closed is refused, and the request would never be billed. ``Drain`` counts the
requests from arrival until their metering is done, and the lifespan waits for
it to reach zero before the sink closes.
"""

from __future__ import annotations

import asyncio


class Drain:
    """A count of requests whose usage event is not yet published."""

    def __init__(self) -> None:
        self._count = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def count(self) -> int:
        return self._count

    def enter(self) -> None:
        self._count += 1
        self._idle.clear()

    def exit(self) -> None:
        self._count -= 1
        if self._count <= 0:
            self._count = 0
            self._idle.set()

    async def wait(self, timeout: float) -> int:
        """Wait until every request has metered, or ``timeout`` seconds; return how many had not."""
        try:
            async with asyncio.timeout(timeout):
                await self._idle.wait()
        except TimeoutError:
            pass
        return self._count
