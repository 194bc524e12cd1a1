"""The AI gateway's stages, outermost first. ``serving.gateway.app`` stacks them once.

    ObserveStage -> AuthenticateStage -> RouteStage -> ChargeStage (rate limit + quota) -> ExactCacheStage
            -> SemanticCacheStage -> AdmitStage -> ForwardStage

Routing (validation, the token estimate, the class and the failover chain) is
pure and cheap, so it runs before anything is charged: an unknown model or a
residency refusal never costs a rate-limit token. Work "after the response"
(reconciling the TPM reservation, settling the quota, writing the caches,
releasing the admission permit, metering) runs when a stream ends, however it
ends, because each stage wraps the chunks on the way out.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from opentelemetry import trace

from tokenplane.serving.errors import PermissionDenied, QuotaExceeded, RateLimited, ServingError
from tokenplane.serving.gateway.admission import AdmissionController
from tokenplane.serving.gateway.auth import KeyRing
from tokenplane.serving.gateway.call import Call, Handler, Reply
from tokenplane.serving.gateway.charges import Charges
from tokenplane.serving.gateway.exact_cache import ExactCache
from tokenplane.serving.gateway.metrics import GatewayMetrics
from tokenplane.serving.gateway.params import check_headers
from tokenplane.serving.gateway.pricing import Prices
from tokenplane.serving.gateway.requests import decode_body_yielding, parse
from tokenplane.serving.gateway.routing import RequestSignals, Router
from tokenplane.serving.gateway.semantic_cache import SemanticCache, scope_of
from tokenplane.serving.gateway.streams import assemble, cacheable
from tokenplane.serving.modelgw.app import forwardable
from tokenplane.serving.responses_api import carries_text, stream_usage
from tokenplane.serving.tokens import TokenCounter
from tokenplane.serving.types import (
    CacheOutcome,
    Clock,
    Endpoint,
    EventSink,
    Json,
    Upstream,
    UpstreamRequest,
    Usage,
    UsageEvent,
)
from tokenplane.spec import Priority, TopicPurpose, WorkloadClass

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_SECONDS = 600.0  # no attempt starts later than this after arrival, unless the client asks for less
BATCH_TIMEOUT_SECONDS = 3600.0  # batch lines may wait behind interactive work
CACHE_ASSEMBLY_LIMIT = 16_384  # chunks kept to cache a stream; a longer one is served but not cached
PRIORITY_ORDER = [Priority.CRITICAL, Priority.HIGH, Priority.NORMAL, Priority.BATCH]
# Worked out once: the header was checked against a set of the Enum's values built anew on every request.
_RANK = {p.value: PRIORITY_ORDER.index(p) for p in Priority}


def _span(tracer: trace.Tracer | None, name: str) -> AbstractContextManager[Any]:
    return tracer.start_as_current_span(name) if tracer is not None else nullcontext()


async def _wrap(
    chunks: AsyncIterator[Json],
    *,
    on_chunk: Callable[[Json], None] | None = None,
    on_end: Callable[[BaseException | None], Awaitable[None]],
) -> AsyncIterator[Json]:
    """Pass chunks through; run ``on_end`` once when the stream finishes, fails or is cancelled."""
    error: BaseException | None = None
    try:
        async for chunk in chunks:
            if on_chunk is not None:
                on_chunk(chunk)
            yield chunk
    except BaseException as e:
        error = e
        raise
    finally:
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()
        await on_end(error)


async def _then(rest: Awaitable[Reply], on_end: Callable[[BaseException | None], Awaitable[None]]) -> Reply:
    """Run the rest of the pipeline; ``on_end`` runs once when the response is over (a stream: when it ends)."""
    try:
        reply = await rest
    except BaseException as e:
        await on_end(e)
        raise
    if reply.chunks is not None:
        reply.chunks = _wrap(reply.chunks, on_end=on_end)
    else:
        await on_end(None)
    return reply


def _status(error: BaseException | None) -> int:
    if error is None:
        return 200
    if isinstance(error, ServingError):
        return error.status
    return 499 if type(error).__name__ in {"CancelledError", "GeneratorExit"} else 500


class ObserveStage:
    """Stage 16 and the metering of stage 15: one usage event, metrics and a trace per request."""

    def __init__(
        self,
        next: Handler,
        *,
        metrics: GatewayMetrics,
        sink: EventSink,
        prices: Prices,
        region: str,
        clock: Clock,
        tracer: trace.Tracer | None = None,
    ) -> None:
        self.next = next
        self.metrics = metrics
        self.sink = sink
        self.prices = prices
        self.region = region
        self.clock = clock
        self.tracer = tracer

    async def __call__(self, call: Call) -> Reply:
        span = self.tracer.start_span("gateway.request") if self.tracer is not None else None
        with trace.use_span(span, end_on_exit=False) if span is not None else nullcontext():
            return await _then(self.next(call), lambda error: self._finish(call, error, span))

    async def _finish(self, call: Call, error: BaseException | None, span: trace.Span | None) -> None:
        status = _status(error)
        tenant = call.tenant.name if call.tenant is not None else ""
        tier = call.route.tier.value if call.route is not None else ""
        pool = (call.route.primary_pool or "") if call.route is not None else ""
        latency = self.clock.monotonic() - call.received
        self.metrics.requests.labels(tenant, tier, pool, str(status), call.cache.value).inc()
        if isinstance(error, RateLimited):
            self.metrics.rate_limited.labels(tenant, error.type).inc()
        elif isinstance(error, QuotaExceeded):
            self.metrics.rate_limited.labels(tenant, "quota").inc()
        if span is not None:
            span.set_attribute("tokenplane.tenant", tenant)
            span.set_attribute("tokenplane.tier", tier)
            span.set_attribute("http.status_code", status)
            span.end()
        if call.tenant is None or call.request is None:
            if isinstance(error, ServingError) and status in (401, 403):
                await self._audit(call, "denied", error)
            return
        if isinstance(error, PermissionDenied | QuotaExceeded):
            await self._audit(call, "denied", error)
        if call.route is None:
            return
        self.metrics.latency.labels(tier, pool).observe(latency)
        ttft = None
        if call.first_token_at is not None:
            ttft = call.first_token_at - call.received
            self.metrics.ttft.labels(tier, pool).observe(ttft)
        usage = call.final_usage() if (call.served_by or call.cache is not CacheOutcome.MISS) else Usage(0, 0)
        billed = Usage(0, 0) if call.cache is not CacheOutcome.MISS else usage
        if call.served_by and call.cache is CacheOutcome.MISS:
            call.cost_usd = self.prices.cost(call.served_by, billed)
        self.metrics.tokens.labels(tenant, tier, "in").inc(billed.prompt_tokens)
        self.metrics.tokens.labels(tenant, tier, "out").inc(billed.completion_tokens)
        self.metrics.cost.labels(tenant, tier).inc(call.cost_usd)
        if call.cache is not CacheOutcome.MISS:
            self.metrics.cache_hits.labels(tenant, call.cache.value).inc()
        event = UsageEvent(
            request_id=call.request_id,
            ts=self.clock.time(),
            tenant=tenant,
            region=self.region,
            endpoint=call.endpoint.value,
            workload_class=call.route.workload_class.value,
            priority=call.priority.value,
            tier=tier,
            served_by=str(call.served_by)
            if call.served_by
            else (f"cache:{call.cache.value}" if call.cache is not CacheOutcome.MISS else ""),
            model=call.request.model,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cached_tokens=usage.cached_tokens,
            cost_usd=call.cost_usd,
            latency_ms=latency * 1000,
            ttft_ms=ttft * 1000 if ttft is not None else None,
            cache=call.cache,
            status=status,
            streamed=call.request.stream,
        )
        await self.sink.publish(TopicPurpose.USAGE, tenant, event.to_json())

    async def _audit(self, call: Call, action: str, error: ServingError) -> None:
        tenant = call.tenant.name if call.tenant is not None else ""
        await self.sink.publish(
            TopicPurpose.AUDIT,
            tenant or "anonymous",
            {
                "request_id": call.request_id,
                "ts": self.clock.time(),
                "region": self.region,
                "tenant": tenant,
                "action": action,
                "status": error.status,
                "code": error.code,
                "reason": error.message,
            },
        )


class AuthenticateStage:
    """Stages 2 and 3: the API key names the tenant; its plan, residency and priority come with it."""

    def __init__(self, next: Handler, *, keys: KeyRing, tracer: trace.Tracer | None = None) -> None:
        self.next = next
        self.keys = keys
        self.tracer = tracer

    async def __call__(self, call: Call) -> Reply:
        with _span(self.tracer, "gateway.auth"):
            # A batch line arrives with its tenant already known: the Batch API authenticated the upload.
            tenant = (
                call.tenant if call.tenant is not None else self.keys.authenticate(call.headers.get("authorization"))
            )
            call.tenant = tenant
            call.priority = Priority.BATCH if call.batch else _lowered(tenant.priority, call.headers)
        return await self.next(call)


def _lowered(priority: Priority, headers: Mapping[str, str]) -> Priority:
    """A client may lower its own priority (``x-tokenplane-priority``), never raise it."""
    asked = headers.get("x-tokenplane-priority")
    if asked is None or asked not in _RANK:
        return priority
    return Priority(asked) if _RANK[asked] > _RANK[priority.value] else priority


class RouteStage:
    """Stages 4, 9 and 10: validate, count the prompt, pick the class, the tier and the failover chain."""

    def __init__(
        self,
        next: Handler,
        *,
        router: Router,
        counter_for: Callable[[str], TokenCounter],
        tracer: trace.Tracer | None = None,
    ) -> None:
        self.next = next
        self.router = router
        self.counter_for = counter_for
        self.tracer = tracer

    async def __call__(self, call: Call) -> Reply:
        tenant = call.tenant
        if tenant is None:
            raise RuntimeError("RouteStage runs after AuthenticateStage")
        with _span(self.tracer, "gateway.validate"):
            body = await decode_body_yielding(call.raw)
            model = body.get("model")
            call.request = parse(call.endpoint, body, self.counter_for(model if isinstance(model, str) else ""))
        with _span(self.tracer, "gateway.route"):
            numbers = check_headers(call.headers)
            signals = RequestSignals(
                task_type=call.headers.get("x-tokenplane-task-type"),
                complexity=numbers["complexity"],
                latency_slo_ms=numbers["latency_slo_ms"],
            )
            call.route = self.router.route(tenant, call.request, signals=signals, batch=call.batch)
        call.response_headers["x-tokenplane-tier"] = call.route.tier.value
        call.response_headers["x-tokenplane-class"] = call.route.workload_class.value
        return await self.next(call)


def _consumed(call: Call) -> int:
    """Engine tokens the request used: nothing for a cache hit or a request no upstream answered."""
    if call.cache is not CacheOutcome.MISS or not call.served_by:
        return 0
    return call.final_usage().total_tokens


class ChargeStage:
    """Stages 5 and 6: RPM and TPM, atomic in Redis, and the monthly token and $ quota, charged at the chain's
    worst price, in one round trip; reconciled and settled at the real usage and price in one more."""

    def __init__(self, next: Handler, *, charges: Charges, prices: Prices, tracer: trace.Tracer | None = None) -> None:
        self.next = next
        self.charges = charges
        self.prices = prices
        self.tracer = tracer

    async def __call__(self, call: Call) -> Reply:
        tenant, request, route = call.require()
        ceiling = self.prices.ceiling(route.targets, request.prompt_tokens, request.max_tokens)
        with _span(self.tracer, "gateway.limits"):
            charge = await self.charges.acquire(tenant, tokens=request.estimated_tokens, usd=ceiling)
        call.response_headers.update(charge.reservation.headers)

        async def settle(_: BaseException | None = None) -> None:
            tokens = _consumed(call)
            usd = self.prices.cost(call.served_by, call.final_usage()) if tokens and call.served_by else 0.0
            await self.charges.settle(charge, tokens=tokens, usd=usd)

        return await _then(self.next(call), settle)


async def _replay(chunks: list[Json]) -> AsyncIterator[Json]:
    for chunk in chunks:
        yield chunk


class _CachingStage:
    """What the exact and semantic cache stages share: serve a hit, or store what the pipeline produced."""

    outcome: CacheOutcome
    next: Handler

    def _hit(self, call: Call, cached: Json, replay: Callable[[Json], list[Json]]) -> Reply:
        call.cache = self.outcome
        call.usage = Usage.from_body(cached.get("usage"))
        call.response_headers["x-tokenplane-cache"] = self.outcome.value
        request = call.request
        if request is not None and request.stream:
            return Reply(chunks=_replay(replay(cached)))
        return Reply(body=cached)

    async def _store_after(self, call: Call, reply: Reply, store: Callable[[Json], Awaitable[None]]) -> Reply:
        if reply.body is not None:
            if cacheable(reply.body) and call.cache is CacheOutcome.MISS:
                await store(reply.body)
            return reply
        if reply.chunks is None:
            return reply
        kept: list[Json] = []

        def keep(chunk: Json) -> None:
            if len(kept) < CACHE_ASSEMBLY_LIMIT:
                kept.append(chunk)

        async def at_end(error: BaseException | None) -> None:
            if error is None and call.cache is CacheOutcome.MISS and len(kept) < CACHE_ASSEMBLY_LIMIT:
                whole = assemble(kept)
                if whole is not None:
                    await store(whole)

        reply.chunks = _wrap(reply.chunks, on_chunk=keep, on_end=at_end)
        return reply


class ExactCacheStage(_CachingStage):
    """Stage 7: a deterministic request seen before, for this tenant, is answered from Redis."""

    outcome = CacheOutcome.EXACT

    def __init__(self, next: Handler, *, cache: ExactCache, tracer: trace.Tracer | None = None) -> None:
        self.next = next
        self.cache = cache
        self.tracer = tracer

    async def __call__(self, call: Call) -> Reply:
        tenant, request, _ = call.require()
        if request.endpoint is Endpoint.EMBEDDINGS:
            return await self.next(call)
        key = self.cache.key(tenant.name, request.endpoint.value, request.body)
        if key is None:
            return await self.next(call)
        with _span(self.tracer, "gateway.exact_cache"):
            cached = await self.cache.get(key)
        if cached is not None:
            return self._hit(call, cached, lambda c: self.cache.replay_chunks(c, include_usage=True))
        reply = await self.next(call)
        return await self._store_after(call, reply, lambda body: self.cache.put(key, body))


class SemanticCacheStage(_CachingStage):
    """Stage 8: a prompt close enough to one this tenant asked before is answered from Qdrant."""

    outcome = CacheOutcome.SEMANTIC

    def __init__(
        self,
        next: Handler,
        *,
        cache: SemanticCache,
        replay: Callable[[Json], list[Json]],
        tracer: trace.Tracer | None = None,
    ) -> None:
        self.next = next
        self.cache = cache
        self.replay = replay
        self.tracer = tracer

    async def __call__(self, call: Call) -> Reply:
        tenant, request, route = call.require()
        layer = self.cache.layer
        if (
            request.endpoint is Endpoint.EMBEDDINGS
            or not layer.enabled
            or route.workload_class not in layer.classes
            or call.headers.get("cache-control", "").lower() in {"no-cache", "no-store"}
        ):
            return await self.next(call)
        scope = scope_of(request.endpoint.value, request.model, route.tier.value, request.body)
        with _span(self.tracer, "gateway.semantic_cache"):
            probe = await self.cache.probe(tenant.name, scope, request.prompt_text)
        if probe.answer is not None:
            return self._hit(call, probe.answer, self.replay)
        reply = await self.next(call)
        return await self._store_after(
            call,
            reply,
            lambda body: self.cache.store(tenant.name, scope, request.prompt_text, body, vector=probe.vector),
        )


class AdmitStage:
    """Stage 11: a permit on the primary pool, in priority order, or a shed with Retry-After."""

    def __init__(
        self,
        next: Handler,
        *,
        pools: dict[str, AdmissionController],
        max_wait: Callable[[Priority, WorkloadClass], float],
        metrics: GatewayMetrics,
        tracer: trace.Tracer | None = None,
    ) -> None:
        self.next = next
        self.pools = pools
        self.max_wait = max_wait
        self.metrics = metrics
        self.tracer = tracer

    async def __call__(self, call: Call) -> Reply:
        _, _, route = call.require()
        controller = self.pools.get(route.primary_pool or "")
        if controller is None:  # a provider-first chain: the provider does its own admission
            return await self.next(call)
        with _span(self.tracer, "gateway.admission"):
            self.metrics.queue_depth.labels(controller.pool).set(controller.queued + 1)
            try:
                ticket = await controller.admit(
                    call.priority, max_wait=self.max_wait(call.priority, route.workload_class)
                )
            except ServingError as e:
                self.metrics.sheds.labels(controller.pool, call.priority.value).inc()
                e.headers.setdefault("x-tokenplane-shed", call.priority.value)
                raise
            finally:
                self.metrics.queue_depth.labels(controller.pool).set(controller.queued)
        self.metrics.in_flight.labels(controller.pool).set(controller.in_flight)

        async def release(_: BaseException | None = None) -> None:
            ticket.release()
            self.metrics.in_flight.labels(controller.pool).set(controller.in_flight)

        return await _then(self.next(call), release)


class ForwardStage:
    """Stages 12-14: the model gateway walks the failover chain; the engine prefills and decodes."""

    def __init__(self, *, upstream: Upstream, clock: Clock, tracer: trace.Tracer | None = None) -> None:
        self.upstream = upstream
        self.clock = clock
        self.tracer = tracer

    def _request(self, call: Call) -> UpstreamRequest:
        tenant, request, route = call.require()
        budget = BATCH_TIMEOUT_SECONDS if call.batch else REQUEST_TIMEOUT_SECONDS
        asked = check_headers(call.headers)["timeout_ms"]  # checked by RouteStage: > 0 and finite
        if asked is not None:
            budget = min(budget, asked / 1000)
        return UpstreamRequest(
            endpoint=request.endpoint,
            body=request.body,
            targets=route.targets,
            request_id=call.request_id,
            tenant=tenant.name,
            priority=call.priority,
            deadline=call.received + budget,
            affinity_key=request.affinity_key,
            estimated_tokens=request.estimated_tokens,
            # The client's bytes, where they can travel as they are: no hop encodes the body again.
            raw=call.raw if forwardable(call.raw) else None,
        )

    async def __call__(self, call: Call) -> Reply:
        upstream_request = self._request(call)
        request = call.request
        if request is not None and request.stream:
            return Reply(chunks=self._stream(call, upstream_request))
        with _span(self.tracer, "gateway.upstream"):
            completion = await self.upstream.complete(upstream_request)
        call.served_by = completion.served_by
        call.usage = Usage.from_body(completion.body.get("usage"))
        call.response_headers["x-tokenplane-served-by"] = str(call.served_by)
        call.response_headers.update(completion.headers)
        return Reply(body=completion.body)

    async def _stream(self, call: Call, upstream_request: UpstreamRequest) -> AsyncIterator[Json]:
        stream = await self.upstream.stream(upstream_request)
        call.served_by = stream.served_by
        try:
            async for chunk in stream:
                usage = stream_usage(chunk)
                if usage:
                    call.usage = Usage.from_body(usage)
                if carries_text(chunk):
                    if call.first_token_at is None:
                        call.first_token_at = self.clock.monotonic()
                    call.streamed_tokens += 1
                yield chunk
        finally:
            await stream.aclose()
