"""A stream the model gateway hands back once its first chunk has arrived.

From here on nothing is retried: a client has seen tokens, and a second
attempt would repeat them. A failure, an idle gap longer than the idle
timeout, or an upstream that stops without finishing, is raised from the
iterator as ``UpstreamStreamBroken``, never a quiet end.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable

from tokenplane.serving.errors import UpstreamStreamBroken
from tokenplane.serving.responses_api import stream_usage
from tokenplane.serving.types import Json, Target

log = logging.getLogger(__name__)

# Called once when the stream ends: the error that broke it (None when it finished or was
# closed by the reader), whether it finished, and the usage the upstream reported.
OnEnd = Callable[[BaseException | None, bool, Json | None], None]


class GatewayStream:
    """``serving.types.CompletionStream`` over one provider attempt's chunks.

    Args:
        first: The chunk that arrived during the attempt.
        chunks: The rest of the provider's iterator.
        served_by: The target that answered.
        attempts: Attempts the request took, this one included.
        idle_timeout: Longest wait for the next chunk before the stream counts as broken.
        on_end: Settles the breaker, the balancer's lease and the metrics (or set later with ``bind``).
    """

    def __init__(
        self,
        first: Json,
        chunks: AsyncGenerator[Json, None],
        *,
        served_by: Target,
        attempts: int,
        idle_timeout: float,
        on_end: OnEnd | None = None,
    ) -> None:
        self.served_by = served_by
        self.attempts = attempts
        self._first: Json | None = first
        self._chunks = chunks
        self._idle_timeout = idle_timeout
        self._on_end = on_end
        self._ended = False
        self._usage: Json | None = None

    def __aiter__(self) -> AsyncIterator[Json]:
        return self

    async def __anext__(self) -> Json:
        if self._first is not None:
            chunk, self._first = self._first, None
            return self._seen(chunk)
        if self._ended:
            raise StopAsyncIteration
        try:
            async with asyncio.timeout(self._idle_timeout):
                chunk = await anext(self._chunks)
        except StopAsyncIteration:
            self._end(None, finished=True)
            raise
        except TimeoutError as e:
            await self._abort(e)
            raise UpstreamStreamBroken(
                f"{self.served_by} sent nothing for {self._idle_timeout:g}s after the first token"
            ) from e
        except Exception as e:  # the provider maps its errors; anything else is a break all the same
            await self._abort(e)
            raise UpstreamStreamBroken(f"{self.served_by} failed after the first token: {e}") from e
        return self._seen(chunk)

    def _seen(self, chunk: Json) -> Json:
        usage = stream_usage(chunk)  # chat's usage chunk, or a Responses stream's terminal event
        if usage:
            self._usage = usage
        return chunk

    async def _abort(self, error: BaseException) -> None:
        log.warning("%s: stream broken after the first token: %s", self.served_by, error)
        self._end(error, finished=False)
        await self._chunks.aclose()

    def bind(self, on_end: OnEnd) -> None:
        """Set what runs once when the stream ends."""
        self._on_end = on_end

    def _end(self, error: BaseException | None, *, finished: bool) -> None:
        if not self._ended:
            self._ended = True
            if self._on_end is not None:
                self._on_end(error, finished, self._usage)

    async def aclose(self) -> None:
        """Stop reading: closes the upstream response, which cancels the generation there."""
        self._first = None
        self._end(None, finished=False)
        await self._chunks.aclose()
