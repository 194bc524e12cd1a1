"""The AI gateway's ASGI app: OpenAI's API in front of the stages, built once from the spec.

``create_app`` takes every dependency as an argument (Redis, the upstream,
the event sink, the semantic cache, the clock, the metrics registry, the
tracer), so tests and ``tokenplane dev`` hand in real local services and
production hands in the cloud ones; nothing here reads the environment.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis
from opentelemetry import trace
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route as HttpRoute

from tokenplane.model import planner
from tokenplane.model.planner import Plan
from tokenplane.serving import jsonbody
from tokenplane.serving.errors import AuthenticationFailed, NotFound, ServingError
from tokenplane.serving.gateway.admission import AdmissionController
from tokenplane.serving.gateway.auth import KeyRing, Resolver
from tokenplane.serving.gateway.call import Call, Handler
from tokenplane.serving.gateway.charges import Charges
from tokenplane.serving.gateway.drain import Drain
from tokenplane.serving.gateway.edge import InternalError, error_json, public_app
from tokenplane.serving.gateway.exact_cache import ExactCache
from tokenplane.serving.gateway.metrics import GatewayMetrics
from tokenplane.serving.gateway.params import echo
from tokenplane.serving.gateway.pricing import Prices
from tokenplane.serving.gateway.quota import QuotaLedger
from tokenplane.serving.gateway.ratelimit import RateLimiter
from tokenplane.serving.gateway.routing import Router
from tokenplane.serving.gateway.semantic_cache import SemanticCache
from tokenplane.serving.gateway.stages import (
    AdmitStage,
    AuthenticateStage,
    ChargeStage,
    ExactCacheStage,
    ForwardStage,
    ObserveStage,
    RouteStage,
    SemanticCacheStage,
)
from tokenplane.serving.gateway.streams import ClosingStreamingResponse, response_sse, sse, with_keepalive
from tokenplane.serving.tokens import ESTIMATE, TokenCounter, counter_for
from tokenplane.serving.types import Clock, Endpoint, EventSink, SystemClock, Upstream
from tokenplane.spec import PlatformSpec, Priority, WorkloadClass

log = logging.getLogger(__name__)

JSON_MEDIA = "application/json"


@dataclass
class Gateway:
    """What the app is made of; kept on ``app.state.gateway`` for health checks and tests."""

    spec: PlatformSpec
    region: str
    pipeline: Handler
    keys: KeyRing
    router: Router
    redis: aioredis.Redis
    upstream: Upstream
    sink: EventSink
    clock: Clock
    metrics: GatewayMetrics
    admission: dict[str, AdmissionController]
    limiter: RateLimiter
    ledger: QuotaLedger
    extra_routes: list[HttpRoute] = field(default_factory=list)
    drain: Drain = field(default_factory=Drain)  # requests not yet metered: the sink closes after them

    def openapi(self) -> dict[str, Any]:
        """This gateway's OpenAPI document: its platform, region, model names and mounted APIs."""
        from tokenplane.serving.gateway.openapi import openapi_document  # built on first request only

        mounted = {getattr(route, "path", "") for route in self.extra_routes}
        return openapi_document(self.spec, region=self.region, model_names=self.router.model_names(), mounted=mounted)


def admission_permits(
    spec: PlatformSpec, region: str, *, gateway_replicas: int, plan: Plan | None = None
) -> dict[str, int]:
    """Per pool: its batch slots at max replicas (the planner's), shared among the gateway replicas.

    ``plan``: the spec's capacity plan, when the caller has it already (None: size the spec here).
    """
    placements = {pl.pool: pl for pl in spec.region(region).pools}
    sized = plan if plan is not None else planner.plan(spec)
    return {
        p.name: max(1, math.ceil(p.batch_slots * placements[p.name].max_replicas / gateway_replicas))
        for p in sized.pools
        if p.region == region and p.name in placements
    }


def _counters(spec: PlatformSpec) -> Callable[[str], TokenCounter]:
    """The tokenizer of the model a request names (its tier's first pool for a tier name), else the estimate."""
    by_name: dict[str, TokenCounter] = {}
    for pool in spec.pools:
        model = spec.model(pool.model)
        counter = counter_for(model)
        for name in (model.name, model.ref):
            by_name.setdefault(name, counter)
        by_name.setdefault(pool.tier.value, counter)
    return lambda name: by_name.get(name, ESTIMATE)


def providers_with_keys(spec: PlatformSpec, resolve: Resolver) -> list[str]:
    """The spec's providers whose key resolves here: the model gateway skips the others (same secrets)."""
    return [p.name for p in spec.providers if resolve(p.api_key_secret)]


def queue_deadlines(spec: PlatformSpec) -> Callable[[Priority, WorkloadClass], float]:
    """Each (level, class) pair's queue deadline, worked out once: the lookup is on every request's path."""
    deadlines = {
        (priority, cls): spec.queues.max_wait_s(priority, spec.workload_classes[cls].ttft_p95_ms)
        for priority in Priority
        for cls in spec.workload_classes
    }
    return lambda priority, cls: deadlines.get((priority, cls), spec.queues.max_wait_s(priority, None))


def build_gateway(
    spec: PlatformSpec,
    region: str,
    *,
    redis: aioredis.Redis,
    upstream: Upstream,
    sink: EventSink,
    resolve: Resolver,
    semantic: SemanticCache | None = None,
    clock: Clock | None = None,
    registry: CollectorRegistry | None = None,
    tracer: trace.Tracer | None = None,
    gateway_replicas: int = 1,
    permits: dict[str, int] | None = None,
    plan: Plan | None = None,
) -> Gateway:
    """Stack the stages once. ``permits`` overrides the planner's admission permits per pool.

    ``plan`` is the spec's capacity plan, if the caller has one; otherwise the spec is sized here, once,
    for both the prices and the admission permits.
    """
    clock = clock or SystemClock()
    plan = plan if plan is not None else planner.plan(spec)
    metrics = GatewayMetrics(registry or CollectorRegistry())
    keys = KeyRing.from_spec(spec, resolve)
    router = Router(spec, region, providers=providers_with_keys(spec, resolve))
    prices = Prices(spec, region, plan=plan)
    limiter = RateLimiter(redis, replicas=gateway_replicas)
    ledger = QuotaLedger(redis, clock=clock)
    exact = ExactCache(redis, spec.cache.exact)
    counts = {**admission_permits(spec, region, gateway_replicas=gateway_replicas, plan=plan), **(permits or {})}
    admission = {
        pool: AdmissionController(pool, permits=n, levels=spec.queues.priorities, clock=clock)
        for pool, n in counts.items()
    }
    handler: Handler = ForwardStage(upstream=upstream, clock=clock, tracer=tracer)
    handler = AdmitStage(handler, pools=admission, max_wait=queue_deadlines(spec), metrics=metrics, tracer=tracer)
    if semantic is not None:
        handler = SemanticCacheStage(
            handler, cache=semantic, replay=lambda c: exact.replay_chunks(c, include_usage=True), tracer=tracer
        )
    handler = ExactCacheStage(handler, cache=exact, tracer=tracer)
    handler = ChargeStage(handler, charges=Charges(redis, limiter=limiter, ledger=ledger), prices=prices, tracer=tracer)
    handler = RouteStage(handler, router=router, counter_for=_counters(spec), tracer=tracer)
    handler = AuthenticateStage(handler, keys=keys, tracer=tracer)
    handler = ObserveStage(
        handler, metrics=metrics, sink=sink, prices=prices, region=region, clock=clock, tracer=tracer
    )
    return Gateway(
        spec=spec,
        region=region,
        pipeline=handler,
        keys=keys,
        router=router,
        redis=redis,
        upstream=upstream,
        sink=sink,
        clock=clock,
        metrics=metrics,
        admission=admission,
        limiter=limiter,
        ledger=ledger,
    )


def create_app(gateway: Gateway) -> Starlette:
    """The ASGI app over a built ``Gateway``."""

    async def complete(request: Request, endpoint: Endpoint) -> Response:
        # Counted in until metered: here, or for a stream once its body has closed (its on_closed).
        gateway.drain.enter()
        streaming = False
        try:
            response = await answer(request, endpoint)
            streaming = isinstance(response, ClosingStreamingResponse)
            return response
        finally:
            if not streaming:
                gateway.drain.exit()

    async def answer(request: Request, endpoint: Endpoint) -> Response:
        request_id = f"req_{uuid.uuid4().hex}"
        received = gateway.clock.monotonic()
        call: Call | None = None
        try:
            call = Call(
                request_id=request_id,
                endpoint=endpoint,
                raw=await request.body(),
                headers=request.headers,
                received=received,
            )
            reply = await gateway.pipeline(call)
        except ServingError as e:
            return error_json(e, request_id=request_id, headers=call.response_headers if call else None)
        except Exception as e:  # a bug must still be an OpenAI-shaped 500 that keeps the connection usable
            log.exception("request %s: unhandled error", request_id)
            return error_json(InternalError(f"{type(e).__name__}: {e}"), request_id=request_id)
        headers = {**call.response_headers, "x-request-id": request_id}
        if reply.chunks is not None:
            include_usage = call.request.include_usage if call.request is not None else False
            headers |= {"cache-control": "no-cache", "x-accel-buffering": "no"}
            events = (
                response_sse(reply.chunks, request_id=request_id)
                if endpoint is Endpoint.RESPONSES
                else sse(reply.chunks, include_usage=include_usage, request_id=request_id)
            )
            body = with_keepalive(events)
            return ClosingStreamingResponse(
                body, media_type="text/event-stream", headers=headers, on_closed=gateway.drain.exit
            )
        return Response(jsonbody.dumps(reply.body), media_type=JSON_MEDIA, headers=headers)

    async def chat(request: Request) -> Response:
        return await complete(request, Endpoint.CHAT)

    async def completions(request: Request) -> Response:
        return await complete(request, Endpoint.COMPLETIONS)

    async def embeddings(request: Request) -> Response:
        return await complete(request, Endpoint.EMBEDDINGS)

    async def responses(request: Request) -> Response:
        return await complete(request, Endpoint.RESPONSES)

    def model_object(name: str) -> dict[str, Any]:
        return {"id": name, "object": "model", "created": 0, "owned_by": gateway.spec.platform.name}

    async def models(request: Request) -> Response:
        try:
            gateway.keys.authenticate(request.headers.get("authorization"))
        except AuthenticationFailed as e:
            return error_json(e)
        return JSONResponse({"object": "list", "data": [model_object(n) for n in gateway.router.model_names()]})

    async def model(request: Request) -> Response:
        """``GET /v1/models/{id}`` (``client.models.retrieve``): one of the names ``/v1/models`` lists."""
        try:
            gateway.keys.authenticate(request.headers.get("authorization"))
        except AuthenticationFailed as e:
            return error_json(e)
        name = request.path_params["model"]
        if name not in gateway.router.model_names():
            error = NotFound(
                f"The model {echo(name)} does not exist; GET /v1/models lists the models here",
                param="model",
                code="model_not_found",
            )
            return error_json(error)
        return JSONResponse(model_object(name))

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        checks: dict[str, Any] = {"keys": len(gateway.keys) > 0, "events": getattr(gateway.sink, "healthy", True)}
        ok = all(checks.values())
        checks["redis"] = "degraded" if gateway.limiter.degraded else "ok"
        return JSONResponse({"ready": ok, **checks}, status_code=200 if ok else 503)

    async def openapi(request: Request) -> Response:
        return JSONResponse(gateway.openapi())

    routes = [
        HttpRoute("/v1/chat/completions", chat, methods=["POST"]),
        HttpRoute("/v1/completions", completions, methods=["POST"]),
        HttpRoute("/v1/embeddings", embeddings, methods=["POST"]),
        HttpRoute("/v1/responses", responses, methods=["POST"]),
        HttpRoute("/v1/models", models, methods=["GET"]),
        HttpRoute("/v1/models/{model:path}", model, methods=["GET"]),  # ids such as "org/model" hold a slash
        HttpRoute("/healthz", healthz, methods=["GET"]),
        HttpRoute("/readyz", readyz, methods=["GET"]),
        HttpRoute("/openapi.json", openapi, methods=["GET"]),
        *gateway.extra_routes,
    ]
    app = public_app(routes)
    app.state.gateway = gateway
    return app


def render_metrics(gateway: Gateway) -> bytes:
    """The gateway's Prometheus exposition, with the gauges that are read at scrape time brought up to date."""
    for name, controller in gateway.admission.items():
        gateway.metrics.queue_depth.labels(name).set(controller.queued)
    gateway.metrics.degraded.labels("redis").set(1 if gateway.limiter.degraded else 0)
    gateway.metrics.degraded.labels("kafka").set(0 if getattr(gateway.sink, "healthy", True) else 1)
    return generate_latest(gateway.metrics.registry)


def create_metrics_app(current: Callable[[], Gateway | None]) -> Starlette:
    """``/metrics`` for Prometheus, served on its own port and never on the public one.

    The series are labelled by tenant (requests, tokens, cost in USD), which is the operator's to see
    and no tenant's: the pod's scrape annotations point at this port, and the load balancer only at
    the public one. ``current`` returns the gateway once its process has built it.
    """

    async def metrics(request: Request) -> Response:
        gateway = current()
        if gateway is None:
            return PlainTextResponse("starting\n", status_code=503)
        return Response(render_metrics(gateway), media_type=CONTENT_TYPE_LATEST)

    return Starlette(routes=[HttpRoute("/metrics", metrics, methods=["GET"])])
