"""The shapes the serving packages share, named once.

The AI gateway (``serving.gateway``), the model gateway (``serving.modelgw``),
the batch workers (``serving.batch``) and the engine simulator
(``serving.engine``) all speak in these terms. In production the boundary
between the AI gateway and the model gateway is OpenAI-compatible HTTP; in
tests and benchmarks the same ``Upstream`` protocol is met in process.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from tokenplane.spec import Priority, Tier, TopicPurpose

Json = dict[str, Any]
"""A decoded JSON object: an OpenAI request or response body, a chunk, an event."""


class Clock(Protocol):
    """Time, passed in so that tests can step it."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back: deadlines, latencies, backoff."""
        ...

    def time(self) -> float:
        """Wall-clock seconds since the epoch: timestamps in events and responses."""
        ...


class SystemClock:
    """The real clock."""

    @staticmethod
    def monotonic() -> float:
        return time.monotonic()

    @staticmethod
    def time() -> float:
        return time.time()


class Endpoint(StrEnum):
    """The OpenAI routes that reach a model."""

    CHAT = "/v1/chat/completions"
    COMPLETIONS = "/v1/completions"
    EMBEDDINGS = "/v1/embeddings"
    RESPONSES = "/v1/responses"  # OpenAI's Responses API: generation as chat, on the wire as serving.responses_api


class TargetKind(StrEnum):
    POOL = "pool"  # a self-hosted vLLM pool in this region
    PROVIDER = "provider"  # an external API (OpenAI, Anthropic, an OpenAI-compatible host)


@dataclass(frozen=True, slots=True)
class Target:
    """One step of a failover chain: a pool or a provider, and the tier whose model it serves.

    A provider serves the *requested* tier's mapped model (``providers[].models[tier]``),
    so ``openai@small`` calls the provider's small model. Written ``pool:small@small``.
    """

    kind: TargetKind
    name: str
    tier: Tier

    def __str__(self) -> str:
        return f"{self.kind.value}:{self.name}@{self.tier.value}"

    @classmethod
    def parse(cls, text: str) -> Target:
        """Read ``kind:name@tier``, the form ``str()`` writes; a ``ValueError`` names what is wrong."""
        kind, sep, rest = text.strip().partition(":")
        name, at, tier = rest.partition("@")
        if not sep or not at or not name:
            raise ValueError(f"target {text!r} is not of the form kind:name@tier, e.g. pool:small@small")
        try:
            return cls(TargetKind(kind), name, Tier(tier))
        except ValueError as e:
            raise ValueError(
                f"target {text!r}: kind must be one of {[k.value for k in TargetKind]} "
                f"and tier one of {[t.value for t in Tier]}"
            ) from e


def format_targets(targets: tuple[Target, ...]) -> str:
    return ",".join(str(t) for t in targets)


def parse_targets(text: str) -> tuple[Target, ...]:
    return tuple(Target.parse(part) for part in text.split(",") if part.strip())


@dataclass(frozen=True, slots=True)
class UpstreamRequest:
    """What the AI gateway asks the model gateway for, after routing and admission."""

    endpoint: Endpoint
    body: Json  # the client's OpenAI body; the model gateway rewrites ``model`` for each target
    targets: tuple[Target, ...]  # the failover chain, in order; never empty
    request_id: str
    tenant: str
    priority: Priority
    deadline: float  # Clock.monotonic() after which no new attempt starts
    affinity_key: str = ""  # requests sharing it (a prompt prefix) prefer the same replica
    # The AI gateway's one estimate of the request (prompt + output budget): the model gateway's balancer
    # counts it as the replica's load instead of counting the body again.
    estimated_tokens: int = field(kw_only=True)
    # The body's bytes, where they can be sent as they are (``modelgw.app.forwardable``): a hop appends its
    # own fields to them instead of encoding ``body`` again. The AI gateway sets both (the client's bytes);
    # the model gateway, which does not parse them, leaves ``body`` empty until a provider needs it.
    raw: bytes | None = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts as the engine or provider reported them."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @classmethod
    def from_body(cls, usage: Json | None) -> Usage | None:
        """From an OpenAI ``usage`` object (``None`` when absent): chat's shape, or the Responses API's
        (``input_tokens``, ``output_tokens``, ``input_tokens_details``)."""
        if not usage:
            return None
        if "input_tokens" in usage or "output_tokens" in usage:
            details = usage.get("input_tokens_details") or {}
            return cls(
                prompt_tokens=int(usage.get("input_tokens") or 0),
                completion_tokens=int(usage.get("output_tokens") or 0),
                cached_tokens=int(details.get("cached_tokens") or 0),
            )
        details = usage.get("prompt_tokens_details") or {}
        return cls(
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            cached_tokens=int(details.get("cached_tokens") or 0),
        )


@dataclass(slots=True)
class Completion:
    """A whole (non-streamed) response from the first target that answered."""

    body: Json
    served_by: Target
    attempts: int
    headers: dict[str, str] = field(default_factory=dict)  # the engine's headers the client sees (modelgw FORWARDED)


class CompletionStream(Protocol):
    """A streamed response. It exists only once its first chunk has arrived.

    Retries and failover happen before the first chunk; after it, a failure is
    raised from the iterator as ``serving.errors.UpstreamStreamBroken``. The last
    chunk carries ``usage`` (the model gateway always asks for it).
    """

    served_by: Target
    attempts: int

    def __aiter__(self) -> AsyncIterator[Json]: ...

    async def aclose(self) -> None:
        """Stop reading; cancels the upstream request if it is still running."""
        ...


class Upstream(Protocol):
    """The model gateway as the AI gateway sees it: in process, or over HTTP."""

    async def complete(self, request: UpstreamRequest) -> Completion: ...

    async def stream(self, request: UpstreamRequest) -> CompletionStream: ...

    async def aclose(self) -> None: ...


class CacheOutcome(StrEnum):
    MISS = "miss"
    EXACT = "exact"
    SEMANTIC = "semantic"


@dataclass(frozen=True, slots=True)
class UsageEvent:
    """One metered request: what billing, chargeback and capacity dashboards are built from."""

    request_id: str
    ts: float  # wall clock, seconds since the epoch
    tenant: str
    region: str
    endpoint: str
    workload_class: str
    priority: str
    tier: str
    served_by: str  # "pool:small@small", "provider:openai@small", or "cache:exact"
    model: str
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost_usd: float
    latency_ms: float
    ttft_ms: float | None
    cache: CacheOutcome
    status: int
    streamed: bool
    # Unique per event and fixed when it is made, so a replay from the spool or a producer retry carries the
    # same id: the metering consumer drops a second copy by it. A batch line's attempts share a request_id
    # (a 429'd attempt is metered at 0 tokens), so request_id alone cannot be that key.
    event_id: str = field(default_factory=lambda: f"evt_{uuid.uuid4().hex}")

    def to_json(self) -> Json:
        # Flat fields only: a plain comprehension, not dataclasses.asdict's recursive deep copy, on the hot path.
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["cache"] = self.cache.value
        return data


class EventSink(Protocol):
    """Where usage, audit and batch events go. ``publish`` never loses an event.

    While the broker is unreachable, events wait in a bounded on-disk spool and
    are replayed in order once it returns.
    """

    async def publish(self, purpose: TopicPurpose, key: str, event: Json) -> None: ...

    async def aclose(self) -> None: ...
