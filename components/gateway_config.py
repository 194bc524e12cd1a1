"""GatewayConfig: what one region's serving processes read, without a whole platform spec.

The AI gateway, the model gateway, the batch workers and the metering consumer
route, authenticate, price and admit from the same runtime document: the
tenants, the routing, the pools and their models. ``GatewayConfig`` names those
parts. A program composed by hand writes them (``examples/single-region``); a
spec-driven stack takes them from its spec with ``GatewayConfig.from_spec``.

The process still reads one ``PlatformSpec`` document (``serving.gateway.runtime``),
because it plans prices and admission permits with the same planner as
``tokenplane plan``. Built from a spec, the document is that spec, every region
included, so a region's gateway prices its pools as the whole platform's plan
does. Built by hand, it is this region alone, assembled from the parts here and
validated as ``load_spec`` validates a file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tokenplane.errors import Issue, SpecLoadError
from tokenplane.load import validate_spec
from tokenplane.spec import (
    Budget,
    Caches,
    ClassSpec,
    Environment,
    PlatformSpec,
    Pool,
    Provider,
    Queues,
    Region,
    RegistryModel,
    Routing,
    Tenant,
    WorkloadClass,
)

__all__ = ["GatewayConfig"]

# A hand-built document has one region; the loader reports its problems under `regions[0]` or `regions`.
_REGION_PATHS = ("regions[0]", "regions")
# Where its problems are, as a file is for a spec: "GatewayConfig: tenants[0].rpm: ...".
_WHERE = "GatewayConfig"


@dataclass(frozen=True, kw_only=True)
class GatewayConfig:
    """The tenants, routing and pools the serving processes of one region read.

    Args:
        name: the platform's name (usage events, ``/v1/models``'s ``owned_by``).
        region: the region these processes serve: its pools' placements, jurisdiction and ``traffic_share``.
        pools: the pools the region's gateways route to.
        models: the registry models those pools serve.
        workload_classes: the classes' token ranges and SLOs (routing by class, queue deadlines).
        routing: the tier mix, the rules and the fallbacks.
        budget: the $/h cap; the gateway's plan and the FinOps budget alerts read it.
        peak_rps: the platform's peak requests per second: the gateways' replica count (``replica_bounds``).
        environment: prod runs at least three gateway replicas (one per AZ), others two.
        tenants: who may call and with which limits; their API keys' secrets go into the AI gateway's env.
        providers: external providers for overflow and fallback; their keys go into the model gateway's env.
        cache: the exact and semantic caches' settings.
        queues: the Kafka topics for usage, audit and batch events.
        platform_spec: the spec this config was taken from (``from_spec``); None for one built by hand.
            The processes then read that spec, every region of it: not a field to set by hand.

    Raises:
        SpecLoadError: the parts do not make a valid platform (a pool whose model is missing, a region
            without a traffic share...), each problem with its field path; or they differ from
            ``platform_spec``'s (change the spec and call ``from_spec`` again).
    """

    name: str
    region: Region
    pools: Sequence[Pool]
    models: Sequence[RegistryModel]
    workload_classes: Mapping[WorkloadClass, ClassSpec]
    routing: Routing
    budget: Budget
    peak_rps: float
    environment: Environment = Environment.PROD
    tenants: Sequence[Tenant] = ()
    providers: Sequence[Provider] = ()
    cache: Caches = field(default_factory=Caches)
    queues: Queues = field(default_factory=Queues)
    platform_spec: PlatformSpec | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_document", self._build_document())

    @classmethod
    def from_spec(cls, spec: PlatformSpec, region: str) -> GatewayConfig:
        """The config of ``spec``'s region called ``region`` (``SpecError`` lists the regions if none is)."""
        return cls(
            name=spec.platform.name,
            region=spec.region(region),
            pools=spec.pools,
            models=spec.models,
            workload_classes=spec.workload_classes,
            routing=spec.routing,
            budget=spec.budget,
            peak_rps=spec.platform.peak_rps,
            environment=spec.platform.environment,
            tenants=spec.tenants,
            providers=spec.providers,
            cache=spec.cache,
            queues=spec.queues,
            platform_spec=spec,
        )

    @property
    def document(self) -> PlatformSpec:
        """The runtime document the processes read (``runtime_config`` renders it into their ConfigMap)."""
        document: PlatformSpec = object.__getattribute__(self, "_document")
        return document

    def _build_document(self) -> PlatformSpec:
        if self.platform_spec is not None:
            changed = self._differences(self.platform_spec)
            if changed:
                raise SpecLoadError(
                    [
                        Issue(
                            name,
                            "differs from platform_spec's: a config taken from a spec must match it; "
                            "change the spec and call GatewayConfig.from_spec again, or build one by hand "
                            "without platform_spec",
                            _WHERE,
                        )
                        for name in changed
                    ]
                )
            return self.platform_spec
        data = {
            "platform": {"name": self.name, "environment": self.environment.value, "peak_rps": self.peak_rps},
            "budget": self.budget.model_dump(exclude_none=True),
            "regions": [self.region.model_dump(exclude_none=True)],
            "models": [m.model_dump(exclude_none=True) for m in self.models],
            "pools": [p.model_dump(exclude_none=True) for p in self.pools],
            "workload_classes": {k.value: v.model_dump(exclude_none=True) for k, v in self.workload_classes.items()},
            "tenants": [t.model_dump(exclude_none=True) for t in self.tenants],
            "routing": self.routing.model_dump(exclude_none=True),
            "providers": [p.model_dump(exclude_none=True) for p in self.providers],
            "cache": self.cache.model_dump(exclude_none=True),
            "queues": self.queues.model_dump(exclude_none=True),
        }
        try:
            return validate_spec(data)
        except SpecLoadError as error:
            # The loader speaks of the document; a hand-built config has `region`, not `regions[0]`.
            raise SpecLoadError(
                [Issue(_field_path(issue.path), issue.message, _WHERE) for issue in error.issues]
            ) from error

    def _differences(self, spec: PlatformSpec) -> list[str]:
        """The parts that are not ``spec``'s own."""
        theirs = {
            "name": spec.platform.name,
            "region": spec.region(self.region.name),
            "pools": spec.pools,
            "models": spec.models,
            "workload_classes": spec.workload_classes,
            "routing": spec.routing,
            "budget": spec.budget,
            "peak_rps": spec.platform.peak_rps,
            "environment": spec.platform.environment,
            "tenants": spec.tenants,
            "providers": spec.providers,
            "cache": spec.cache,
            "queues": spec.queues,
        }
        mine = {name: getattr(self, name) for name in theirs}
        return [name for name, value in theirs.items() if not _same(mine[name], value)]


def _field_path(path: str) -> str:
    """The loader's path in the document as the path in the config: its one region is ``region``."""
    for prefix in _REGION_PATHS:
        if path == prefix or path.startswith((f"{prefix}.", f"{prefix}[")):
            return "region" + path.removeprefix(prefix)
    return path


def _same(a: object, b: object) -> bool:
    if a is b:
        return True
    if isinstance(a, Sequence) and isinstance(b, Sequence) and not isinstance(a, str):
        return list(a) == list(b)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return dict(a) == dict(b)
    return a == b
