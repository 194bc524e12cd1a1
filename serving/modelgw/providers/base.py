"""The ``Provider`` protocol every upstream kind implements, and the helpers they share.

A provider makes one attempt and maps whatever its client library raises to
``serving.errors`` at this boundary: retryable failures (connection errors,
timeouts, 5xx, 408, 429) as ``UpstreamError``/``UpstreamTimeout``, a request
the upstream refuses (another 4xx) as ``UpstreamRejected``. Retries, failover,
timeouts and breakers are the gateway's, not the provider's.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, Protocol

from tokenplane.serving.errors import UpstreamError, UpstreamRejected
from tokenplane.serving.types import Endpoint, Json, Target
from tokenplane.spec import Priority

RETRYABLE_4XX = frozenset({408, 429})  # the upstream is busy or slow, not the request wrong
ERROR_TEXT_LIMIT = 500  # characters of a non-JSON error body kept in a message


@dataclass(frozen=True, slots=True)
class ProviderCall:
    """One attempt at one endpoint.

    Attributes:
        endpoint: The OpenAI route.
        body: The client's OpenAI body (``model`` is replaced by ``model`` below).
        target: The chain step this attempt serves.
        model: The upstream's name for the model: a pool's served name or a provider's model.
        url: The replica base URL for a pool; ``None`` for a provider (it has one).
        request_id: The request's id, sent upstream for correlation.
        priority: vLLM's ``priority`` for a pool that runs the priority scheduler (``vllm_priority``);
            None for any other upstream, which is then sent no priority at all.
        raw: The body unparsed (``UpstreamRequest.raw``), for a pool; ``body`` is then empty.
        forwarded: Filled by the provider: the upstream's response headers the client should see
            (``headers.FORWARDED``).
    """

    endpoint: Endpoint
    body: Json
    target: Target
    model: str
    url: str | None
    request_id: str
    priority: int | None = None
    raw: bytes | None = None
    forwarded: dict[str, str] = field(default_factory=dict)


def vllm_priority(level: Priority) -> int:
    """vLLM's ``priority`` for a tenant's level: lower is scheduled first, so critical is 0 and batch 3."""
    return list(Priority).index(level)


class Provider(Protocol):
    """One kind of upstream: a vLLM pool, OpenAI, Anthropic."""

    endpoints: frozenset[Endpoint]  # the routes it can serve; the chain skips it for others

    async def complete(self, call: ProviderCall) -> Json:
        """A whole OpenAI response body."""
        ...

    def stream(self, call: ProviderCall) -> AsyncGenerator[Json, None]:
        """OpenAI chunk dicts, the last carrying ``usage``; closing the iterator cancels the request."""
        ...

    async def aclose(self) -> None: ...


def is_retryable_status(status: int) -> bool:
    return status >= 500 or status in RETRYABLE_4XX


def error_body(raw: Any) -> Json | None:
    """An upstream's error as OpenAI's ``{"error": {...}}``, from whatever shape it came in."""
    if isinstance(raw, (bytes, str)):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    if not isinstance(raw, dict):
        return None
    if isinstance(raw.get("error"), dict):
        return {"error": raw["error"]}  # Anthropic wraps it as {"type": "error", "error": {...}}
    return {"error": raw}


def error_message(body: Json | None, raw: Any = None) -> str:
    if body is not None:
        message = body["error"].get("message")
        if message:
            return str(message)
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw or "")
    return text[:ERROR_TEXT_LIMIT] or "(no body)"


def status_error(where: str, status: int, raw: Any) -> UpstreamError:
    """The error for an HTTP error status: retryable ``UpstreamError``, or ``UpstreamRejected`` carrying the body."""
    body = error_body(raw)
    message = f"{where} answered HTTP {status}: {error_message(body, raw)}"
    if is_retryable_status(status):
        return UpstreamError(message)
    return UpstreamRejected(message, status=status, body=body)
