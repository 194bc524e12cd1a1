"""One request as it passes the gateway's stages, and what a stage hands back.

Each stage is a ``Handler`` that holds the next one: it does its part, calls
``await self.next(call)``, and may wrap the ``Reply`` on the way out (a
stream's chunks are wrapped, so that "after the response" work such as a
rate-limit reconciliation runs when the stream ends, however it ends).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from tokenplane.serving.gateway.requests import ParsedRequest
from tokenplane.serving.gateway.routing import Route
from tokenplane.serving.types import CacheOutcome, Endpoint, Json, Target, Usage
from tokenplane.spec import Priority, Tenant


@dataclass(slots=True)
class Call:
    """The state of one request; stages fill it in as it goes."""

    request_id: str
    endpoint: Endpoint
    raw: bytes
    headers: Mapping[str, str]
    received: float  # Clock.monotonic() when it arrived
    batch: bool = False  # submitted through the Batch API (class D, batch priority)
    tenant: Tenant | None = None
    request: ParsedRequest | None = None
    route: Route | None = None
    priority: Priority = Priority.NORMAL
    cache: CacheOutcome = CacheOutcome.MISS
    served_by: Target | None = None  # the pool or provider that answered
    usage: Usage | None = None
    streamed_tokens: int = 0  # content chunks sent so far: the usage of a stream cut short
    first_token_at: float | None = None
    cost_usd: float = 0.0
    response_headers: dict[str, str] = field(default_factory=dict)

    def require(self) -> tuple[Tenant, ParsedRequest, Route]:
        """The tenant, request and route, for stages that run after routing."""
        if self.tenant is None or self.request is None or self.route is None:
            raise RuntimeError("a stage ran before authentication, validation and routing")
        return self.tenant, self.request, self.route

    def final_usage(self) -> Usage:
        """What the engine reported, or, for a stream cut short, the prompt and the tokens sent."""
        if self.usage is not None:
            return self.usage
        prompt = self.request.prompt_tokens if self.request is not None else 0
        return Usage(prompt, self.streamed_tokens)


@dataclass(slots=True)
class Reply:
    """A whole response (``body``) or a stream of OpenAI chunks (``chunks``)."""

    body: Json | None = None
    chunks: AsyncIterator[Json] | None = None


class Handler(Protocol):
    async def __call__(self, call: Call) -> Reply: ...
