"""OpenTelemetry tracing for the serving processes: one span per request stage, sampled as the spec says.

The sampler is parent-based on a trace-id ratio (``observability.tracing.sample_ratio``),
so a trace that an upstream sampled stays whole, and an unsampled request pays
only for non-recording spans. Spans go to the OTLP endpoint in
``OTEL_EXPORTER_OTLP_ENDPOINT`` (the collector ``components/observability.py``
deploys), or to an exporter passed in (tests use an in-memory one).
"""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

from tokenplane.runtime_env import Var
from tokenplane.spec import Tracing


def tracer_for(
    service: str,
    tracing: Tracing,
    *,
    environ: Mapping[str, str],
    region: str,
    exporter: SpanExporter | None = None,
) -> trace.Tracer | None:
    """A tracer for ``service``, or None when tracing is off or has nowhere to go."""
    if not tracing.enabled:
        return None
    provider = TracerProvider(
        resource=Resource.create({"service.name": service, "tokenplane.region": region}),
        sampler=ParentBased(TraceIdRatioBased(tracing.sample_ratio)),
    )
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    elif environ.get(Var.OTEL_ENDPOINT):
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTLP gRPC; endpoint from the env
    else:
        return None
    return provider.get_tracer("tokenplane.serving")
