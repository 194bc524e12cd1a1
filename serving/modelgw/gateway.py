"""``FailoverUpstream``: walks the failover chain the AI gateway chose, with retries before the first token.

For each target of ``UpstreamRequest.targets`` in order::

    skip it if unavailable here (no replicas, no key, route not served)  -> reason kept
    attempt 1..N:
        no attempt starts after the deadline
        pick an endpoint: a replica not yet tried whose breaker allows it (a provider: itself)
        send, bounded by min(attempt timeout, time left)
        retryable failure -> breaker counts it, back off (full jitter), next attempt
        UpstreamRejected  -> re-raised at once: another target would refuse it too
    next target

A stream is handed back only once its first chunk has arrived, so every retry
and failover happens before a client sees a token. When the chain is
exhausted, ``UpstreamUnavailable`` (or ``UpstreamTimeout`` once the deadline
passed) names what happened at each target.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import aiohttp
from prometheus_client import CollectorRegistry

from tokenplane.serving import jsonbody
from tokenplane.serving.errors import UpstreamError, UpstreamTimeout, UpstreamUnavailable
from tokenplane.serving.modelgw.backoff import DEFAULT_BASE_S, DEFAULT_CAP_S, Backoff
from tokenplane.serving.modelgw.balancer import Balancer, Lease
from tokenplane.serving.modelgw.breaker import DEFAULT_COOLDOWN_S, DEFAULT_THRESHOLD, Breakers, CircuitBreaker
from tokenplane.serving.modelgw.config import ModelGatewayConfig, ProviderConfig
from tokenplane.serving.modelgw.metrics import ModelGatewayMetrics
from tokenplane.serving.modelgw.providers.anthropic import AnthropicProvider
from tokenplane.serving.modelgw.providers.base import Provider, ProviderCall, vllm_priority
from tokenplane.serving.modelgw.providers.openai import OpenAIProvider
from tokenplane.serving.modelgw.providers.vllm import VllmProvider
from tokenplane.serving.modelgw.stream import GatewayStream
from tokenplane.serving.types import Clock, Completion, Json, SystemClock, Target, TargetKind, UpstreamRequest
from tokenplane.spec import ProviderKind

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_ATTEMPTS_PER_TARGET = 3  # a pool's first try and two other replicas; then the chain's next target
DEFAULT_ATTEMPT_TIMEOUT_S = 30.0  # to a whole response, or a stream's first chunk: a long prefill fits, a hang does not
DEFAULT_STREAM_IDLE_TIMEOUT_S = 60.0  # between chunks once streaming: decode never pauses this long unless stuck

ProviderFactory = Callable[[ProviderConfig, Clock], Provider]

# External providers by kind; an OpenAI-compatible host is OpenAI's API at another base URL.
PROVIDER_KINDS: dict[ProviderKind, ProviderFactory] = {
    ProviderKind.OPENAI: lambda config, clock: OpenAIProvider(config),
    ProviderKind.OPENAI_COMPATIBLE: lambda config, clock: OpenAIProvider(config),
    ProviderKind.ANTHROPIC: lambda config, clock: AnthropicProvider(config, clock=clock),
}


@dataclass(slots=True)
class _Route:
    """How to reach one target: its provider, the upstream model name and its endpoints."""

    provider: Provider
    model: str
    balancer: Balancer | None = None  # pools only
    endpoint: str = ""  # providers only: the breaker key
    priority_scheduling: bool = False  # pools only: the replicas order waiting requests by ``priority``


@dataclass(slots=True)
class _Attempt:
    call: ProviderCall
    timeout: float
    started: float
    lease: Lease | None = None  # pools only: the replica's count of pending prefills and tokens


@dataclass(slots=True)
class _Walk:
    """What one request's walk has seen, for the final error."""

    attempts: int = 0
    failures: list[str] = field(default_factory=list)
    last: UpstreamError | None = None
    deadline_passed: bool = False


class FailoverUpstream:
    """``serving.types.Upstream`` in process: the pools and providers of one region.

    Args:
        config: This region's pools and providers (``load_modelgw_config``).
        session: The aiohttp session for the pools (pooled keep-alive); the caller closes it.
        registry: Where the metrics are registered; a private one when ``None``.
        clock: Deadlines, latencies and breaker cooldowns.
        rng: Backoff jitter.
        sleep: Waits out a backoff (``asyncio.sleep``; tests pass one that steps their clock).
        providers: Ready-made providers by name, instead of building them from ``config`` (tests).
        attempts_per_target: Attempts at one target before failing over to the next.
        attempt_timeout: Seconds one attempt may take to a whole response or a stream's first chunk.
        stream_idle_timeout: Seconds a stream may go without a chunk once it has started.
        backoff_base: Ceiling of the first backoff, in seconds.
        backoff_cap: Largest backoff ceiling, in seconds.
        breaker_threshold: Consecutive retryable failures that open an endpoint's breaker.
        breaker_cooldown: Seconds a breaker stays open before a probe.
    """

    def __init__(
        self,
        config: ModelGatewayConfig,
        *,
        session: aiohttp.ClientSession,
        registry: CollectorRegistry | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        providers: Mapping[str, Provider] | None = None,
        attempts_per_target: int = DEFAULT_ATTEMPTS_PER_TARGET,
        attempt_timeout: float = DEFAULT_ATTEMPT_TIMEOUT_S,
        stream_idle_timeout: float = DEFAULT_STREAM_IDLE_TIMEOUT_S,
        backoff_base: float = DEFAULT_BASE_S,
        backoff_cap: float = DEFAULT_CAP_S,
        breaker_threshold: int = DEFAULT_THRESHOLD,
        breaker_cooldown: float = DEFAULT_COOLDOWN_S,
    ) -> None:
        if attempts_per_target < 1:
            raise ValueError(f"attempts_per_target={attempts_per_target} must be at least 1")
        if attempt_timeout <= 0 or stream_idle_timeout <= 0:
            raise ValueError(
                f"attempt_timeout={attempt_timeout} and stream_idle_timeout={stream_idle_timeout} must be positive"
            )
        self.config = config
        self.clock: Clock = clock or SystemClock()
        self._rng = rng or random.Random()
        self._sleep = sleep
        self.attempts_per_target = attempts_per_target
        self.attempt_timeout = attempt_timeout
        self.stream_idle_timeout = stream_idle_timeout
        self._backoff = Backoff(rng=self._rng, base=backoff_base, cap=backoff_cap)
        self.breakers = Breakers(clock=self.clock, threshold=breaker_threshold, cooldown=breaker_cooldown)
        self.registry = registry if registry is not None else CollectorRegistry()
        self.metrics = ModelGatewayMetrics(self.registry)
        self._vllm = VllmProvider(session)
        self.balancers = {name: Balancer(pool.replicas) for name, pool in config.pools.items() if pool.replicas}
        self._providers: dict[str, Provider] = dict(providers or {})
        for name, provider in config.providers.items():
            if name not in self._providers and provider.api_key:
                self._providers[name] = PROVIDER_KINDS[provider.spec.kind](provider, self.clock)

    # --- the Upstream protocol ---------------------------------------------------------------

    async def complete(self, request: UpstreamRequest) -> Completion:
        """A whole response from the first target that answers.

        Raises:
            UpstreamRejected: an upstream refused the request itself (not retried).
            UpstreamUnavailable: every target failed or was unavailable.
            UpstreamTimeout: the deadline passed before any target answered.
        """
        walk = _Walk()

        async def once(target: Target, route: _Route, attempt: _Attempt) -> Completion:
            body = await route.provider.complete(attempt.call)
            self.metrics.latency.labels(str(target)).observe(self.clock.monotonic() - attempt.started)
            self.metrics.usage(str(target), body.get("usage"))
            return Completion(body=body, served_by=target, attempts=walk.attempts, headers=attempt.call.forwarded)

        return await self._walk(request, walk, once)

    async def stream(self, request: UpstreamRequest) -> GatewayStream:
        """A stream from the first target whose first chunk arrives; see ``serving.types.CompletionStream``.

        Raises:
            UpstreamRejected: an upstream refused the request itself (not retried).
            UpstreamUnavailable: every target failed or was unavailable before its first chunk.
            UpstreamTimeout: the deadline passed before any first chunk.
        """
        walk = _Walk()
        started = self.clock.monotonic()

        async def once(target: Target, route: _Route, attempt: _Attempt) -> GatewayStream:
            chunks = route.provider.stream(attempt.call)
            try:
                first = await anext(chunks)
            except StopAsyncIteration:
                raise UpstreamError(f"{target} ended its stream before the first chunk") from None
            except BaseException:
                await chunks.aclose()  # a timeout or cancellation closes the upstream response too
                raise
            if attempt.lease is not None:
                attempt.lease.first_token()  # the replica's prefill of it is done: no longer ahead of newcomers
            self.metrics.ttft.labels(str(target)).observe(self.clock.monotonic() - started)
            return GatewayStream(
                first,
                chunks,
                served_by=target,
                attempts=walk.attempts,
                idle_timeout=self.stream_idle_timeout,
            )

        return await self._walk(request, walk, once)

    async def aclose(self) -> None:
        """Close the providers' SDK clients; the aiohttp session is the caller's."""
        for provider in self._providers.values():
            await provider.aclose()

    # --- the walk ----------------------------------------------------------------------------

    def _route(self, target: Target, request: UpstreamRequest) -> _Route | str:
        """How to reach ``target``, or why it is unavailable here."""
        if target.kind is TargetKind.POOL:
            pool = self.config.pools.get(target.name)
            if pool is None:
                return f"pool {target.name} is not placed in region {self.config.region}"
            if pool.unavailable_reason:
                return pool.unavailable_reason
            return _Route(
                self._vllm,
                pool.served_model,
                balancer=self.balancers[target.name],
                priority_scheduling=pool.priority_scheduling,
            )
        config = self.config.providers.get(target.name)
        if config is None:
            return f"the spec has no provider named {target.name}"
        provider = self._providers.get(target.name)
        if provider is None:
            return config.unavailable_reason or f"provider {target.name} is not configured"
        if request.endpoint not in provider.endpoints:
            return f"provider {target.name} ({config.spec.kind}) does not serve {request.endpoint.value}"
        model = config.spec.models.get(target.tier)
        if model is None:
            return f"provider {target.name} maps no model for tier {target.tier}"
        return _Route(provider, model.model, endpoint=f"provider:{target.name}")

    def _pick(self, route: _Route, request: UpstreamRequest, excluded: set[str]) -> str | None:
        if route.balancer is None:
            # A provider is one endpoint with its own balancing behind it: a retry there lands elsewhere.
            return route.endpoint if self._breaker(route.endpoint).allows() else None
        return route.balancer.choose(
            request.affinity_key, excluded=excluded, allowed=lambda url: self._breaker(url).allows()
        )

    def _breaker(self, endpoint: str) -> CircuitBreaker:
        breaker = self.breakers[endpoint]
        self.metrics.breaker_state(endpoint, breaker.state)
        return breaker

    async def _walk(
        self,
        request: UpstreamRequest,
        walk: _Walk,
        once: Callable[[Target, _Route, _Attempt], Awaitable[T]],
    ) -> T:
        if not request.targets:
            raise UpstreamUnavailable(f"request {request.request_id} has an empty failover chain")
        tokens = request.estimated_tokens  # the AI gateway's estimate: one per request, never recounted here
        for target in request.targets:
            label = str(target)
            if self.clock.monotonic() >= request.deadline:
                walk.deadline_passed = True
                walk.failures.append(f"{label}: not tried, the deadline had passed")
                self.metrics.failures.labels(label, "deadline").inc()
                continue
            route = self._route(target, request)
            if isinstance(route, str):
                log.info("%s: skipped for request %s: unavailable (%s)", label, request.request_id, route)
                walk.failures.append(f"{label}: unavailable ({route})")
                self.metrics.failures.labels(label, "unavailable").inc()
                continue
            if route.balancer is None and request.raw is not None and not request.body:
                # A provider's SDK takes fields, not bytes: the body is parsed once, for the first provider.
                request = dataclasses.replace(request, body=jsonbody.loads_internal(request.raw), raw=None)
            errors: list[str] = []
            excluded: set[str] = set()
            for n in range(1, self.attempts_per_target + 1):
                left = request.deadline - self.clock.monotonic()
                if left <= 0:
                    walk.deadline_passed = True
                    errors.append("the deadline passed")
                    break
                endpoint = self._pick(route, request, excluded)
                if endpoint is None:
                    reason = "circuit open" if not excluded else "no replica left to try"
                    if not excluded:
                        self.metrics.failures.labels(label, "circuit_open").inc()
                    errors.append(reason + (" on every replica" if route.balancer is not None and not excluded else ""))
                    break
                breaker = self._breaker(endpoint)
                breaker.acquire()
                lease = route.balancer.hold(endpoint, tokens) if route.balancer is not None else None
                url = endpoint if route.balancer is not None else None
                call = ProviderCall(
                    request.endpoint,
                    request.body,
                    target,
                    route.model,
                    url,
                    request.request_id,
                    vllm_priority(request.priority) if route.priority_scheduling else None,
                    raw=request.raw,
                )
                attempt = _Attempt(call, min(self.attempt_timeout, left), self.clock.monotonic(), lease)
                walk.attempts += 1
                self.metrics.attempts.labels(label).inc()
                handed_over = False  # a stream keeps the lease until it ends
                try:
                    async with asyncio.timeout(attempt.timeout):
                        result = await once(target, route, attempt)
                except TimeoutError:
                    error: UpstreamError = UpstreamTimeout(
                        f"{label} at {endpoint}: no answer within {attempt.timeout:g}s"
                    )
                except UpstreamError as e:
                    if not e.retryable:
                        breaker.record_success()  # it answered: the request is wrong, not the endpoint
                        self.metrics.failures.labels(label, "rejected").inc()
                        log.info("%s: attempt %d/%d rejected, not retried: %s", label, n, self.attempts_per_target, e)
                        raise
                    error = e
                except BaseException:
                    breaker.release()  # cancelled (the client left): no verdict on the endpoint
                    raise
                else:
                    breaker.record_success()
                    self._breaker(endpoint)
                    if isinstance(result, GatewayStream):
                        result.attempts = walk.attempts
                        result.bind(self._stream_end(label, endpoint, lease, attempt.started))
                        handed_over = True
                    return result
                finally:
                    if lease is not None and not handed_over:
                        lease.release()
                # A retryable failure: count it against the endpoint and try again, elsewhere when we can.
                breaker.record_failure()
                self._breaker(endpoint)
                excluded.add(endpoint)
                walk.last = error
                errors.append(error.message)
                timed_out = isinstance(error, UpstreamTimeout)
                self.metrics.failures.labels(label, "timeout" if timed_out else "error").inc()
                if n == self.attempts_per_target or self._pick(route, request, excluded) is None:
                    # No attempts or no untried replica left: the next target beats backing off here.
                    log.warning("%s: attempt %d/%d failed: %s; failing over", label, n, self.attempts_per_target, error)
                    break
                delay = min(self._backoff.delay(n - 1), max(0.0, request.deadline - self.clock.monotonic()))
                log.warning(
                    "%s: attempt %d/%d failed: %s; retrying in %.3fs", label, n, self.attempts_per_target, error, delay
                )
                await self._sleep(delay)
            walk.failures.append(f"{label}: " + "; ".join(errors))
        summary = "; ".join(walk.failures)
        tried = f"after {walk.attempts} attempt{'s' if walk.attempts != 1 else ''}"
        if walk.deadline_passed:
            raise UpstreamTimeout(
                f"request {request.request_id}: the deadline passed {tried}: {summary}"
            ) from walk.last
        raise UpstreamUnavailable(f"request {request.request_id}: no target answered {tried}: {summary}") from walk.last

    def _stream_end(
        self, label: str, endpoint: str, lease: Lease | None, started: float
    ) -> Callable[[BaseException | None, bool, Json | None], None]:
        def on_end(error: BaseException | None, finished: bool, usage: Json | None) -> None:
            if lease is not None:
                lease.release()
            if error is not None:
                self._breaker(endpoint).record_failure()
                self._breaker(endpoint)
                self.metrics.failures.labels(label, "stream_broken").inc()
            if finished:
                self.metrics.latency.labels(label).observe(self.clock.monotonic() - started)
            self.metrics.usage(label, usage)

        return on_end
