"""The workbench's traffic: when requests arrive, what they ask for, and where the gateway sends them.

Arrivals are a Poisson process whose rate is ``rps`` times a daily profile times
any bursts, held constant within bins of ``ARRIVAL_BIN_S``. Each arrival draws a
region (``traffic_share``), a workload class (``share``), prompt and output
lengths (uniform over the class's ``TokenRange``, as the spec documents) and a
priority. Its destination (a cache hit, a pool, an external provider, or
nowhere) is drawn from the rates that ``tokenplane.model.traffic.route`` computes, so
the simulator and the planner never disagree about routing. Semantic-cache
classes also send one embedding call to the region's embedding pool, as
``route`` counts them.

``tokenplane.sim.arrivals`` draws them one period at a time with numpy from one
seeded generator, so a seed fixes the whole day and a day never sits in memory.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields
from enum import IntEnum, StrEnum

import numpy as np
import numpy.typing as npt

from tokenplane.errors import SpecError
from tokenplane.model.balancing import DEPLOYED_SHARING, BalancePolicy, Sharing
from tokenplane.model.scheduling import priority_levels
from tokenplane.model.traffic import route
from tokenplane.spec import PlatformSpec, Priority, Tier, WorkloadClass

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

ARRIVAL_BIN_S = (
    1.0  # the rate is constant within a bin: the daily curve moves far slower, bursts start on whole minutes
)
DAY_S = 86_400.0
LEVELS: tuple[Priority, ...] = tuple(Priority)  # critical, high, normal, batch: index 0 is served first

# Share of peak traffic per hour of a business day (local time): a night trough, the 08:00-10:00
# surge the reference architecture describes, a working-day plateau and an evening decline.
DIURNAL_HOURLY = (
    0.20, 0.16, 0.14, 0.13, 0.14, 0.18, 0.28, 0.50, 0.80, 0.95, 1.00, 0.98,
    0.92, 0.96, 1.00, 0.97, 0.90, 0.80, 0.66, 0.55, 0.47, 0.40, 0.32, 0.25,
)  # fmt: skip


class Profile(StrEnum):
    """How the arrival rate moves through the day; ``rps`` is its peak."""

    FLAT = "flat"
    DIURNAL = "diurnal"


class Kind(IntEnum):
    """Where a request ends up, decided at the gateway."""

    CACHE = 0  # answered by the exact or semantic cache
    POOL = 1
    PROVIDER = 2
    UNROUTED = 3  # no pool and no provider along the chain: an error to the client


_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?$")
_CLOCK = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
_BURST = re.compile(r"^(?P<at>[^x/]+)x(?P<factor>[^/]+)/(?P<duration>.+)$")


def parse_duration(text: str, *, flag: str = "--duration") -> float:
    """Seconds in ``60s``, ``10m``, ``24h``, ``1h30m`` or a bare number of seconds.

    Raises:
        SpecError: the text is not a positive duration in that form.
    """
    match = _DURATION.match(text.strip())
    if not text.strip() or match is None or not any(match.groups()):
        raise SpecError(f"{flag} {text!r} is not a duration; write e.g. 60s, 10m, 24h or 1h30m")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    total = hours * 3600 + minutes * 60 + seconds
    if total <= 0:
        raise SpecError(f"{flag} {text!r} must be longer than zero; write e.g. 60s, 10m or 24h")
    return total


def parse_clock(text: str, *, flag: str = "--start") -> float:
    """Seconds after midnight of a ``HH:MM`` time of day.

    Raises:
        SpecError: the text is not a 24-hour ``HH:MM`` time.
    """
    match = _CLOCK.match(text.strip())
    if match is None:
        raise SpecError(f"{flag} {text!r} is not a time of day; write HH:MM on a 24-hour clock, e.g. 08:30")
    return int(match.group(1)) * 3600.0 + int(match.group(2)) * 60.0


@dataclass(frozen=True)
class Burst:
    """A surge: the rate times ``factor`` from ``at_s`` (seconds after midnight) for ``duration_s``, every day."""

    at_s: float
    factor: float
    duration_s: float

    @classmethod
    def parse(cls, text: str) -> Burst:
        """Read ``HH:MMxFACTOR/DURATION``, e.g. ``09:00x3/15m``.

        Raises:
            SpecError: the text is not in that form; the message shows one that is.
        """
        form = "write HH:MMxFACTOR/DURATION, e.g. 09:00x3/15m"
        match = _BURST.match(text.strip().replace(" ", ""))
        if match is None:
            raise SpecError(f"--burst {text!r} is not a burst; {form}")
        try:
            factor = float(match.group("factor"))
        except ValueError:
            raise SpecError(f"--burst {text!r}: factor {match.group('factor')!r} is not a number; {form}") from None
        if not math.isfinite(factor) or factor <= 0:
            raise SpecError(f"--burst {text!r}: factor must be a positive number; {form}")
        at = parse_clock(match.group("at"), flag=f"--burst {text!r}: time")
        duration = parse_duration(match.group("duration"), flag=f"--burst {text!r}: duration")
        return cls(at, factor, duration)


def rate_multiplier(profile: Profile, bursts: tuple[Burst, ...], clock_s: F64) -> F64:
    """The share of ``rps`` that arrives at each instant (seconds after day 0's midnight)."""
    time_of_day = np.mod(clock_s, DAY_S)
    if profile is Profile.DIURNAL:
        hours = np.arange(25, dtype=np.float64)
        shares = np.array([*DIURNAL_HOURLY, DIURNAL_HOURLY[0]], dtype=np.float64)
        multiplier = np.interp(time_of_day / 3600.0, hours, shares)
    else:
        multiplier = np.ones_like(time_of_day)
    for burst in bursts:
        inside = np.mod(time_of_day - burst.at_s, DAY_S) < burst.duration_s
        multiplier = np.where(inside, multiplier * burst.factor, multiplier)
    return multiplier


@dataclass(frozen=True)
class Destination:
    """A pool placement or a provider that requests can be sent to."""

    kind: Kind
    index: int  # placement index (regions' pools in spec order) or provider index
    tier: Tier | None = None  # which of the provider's models is priced


@dataclass
class Routing:
    """Per (region, class), the probability of each destination, from ``traffic.route``.

    ``table[r, c]`` sums to one over the pools, then the providers, then a cache hit,
    then unrouted. ``embed[r, c, p]`` is the embedding calls per request sent to placement ``p``.
    """

    destinations: list[Destination]
    table: F64
    embed: F64
    cache_column: int
    unrouted_column: int


def placements(spec: PlatformSpec) -> list[tuple[str, str]]:
    """Every (region, pool) in spec order: the order of ``planner.plan(spec).pools``."""
    return [(r.name, pl.pool) for r in spec.regions for pl in r.pools]


def routing(spec: PlatformSpec) -> Routing:
    """Turn ``route``'s per-destination rates into per-request probabilities."""
    traffic = route(spec)
    keys = placements(spec)
    index = {key: i for i, key in enumerate(keys)}
    provider_tiers = sorted({(s.provider, s.tier) for s in traffic.spills}, key=lambda x: (x[0], x[1].value))
    providers = [p.name for p in spec.providers]
    dests = [Destination(Kind.POOL, i) for i in range(len(keys))]
    dests += [Destination(Kind.PROVIDER, providers.index(name), tier) for name, tier in provider_tiers]
    cache_col, unrouted_col = len(dests), len(dests) + 1
    regions, classes = spec.regions, list(spec.workload_classes)
    table = np.zeros((len(regions), len(classes), len(dests) + 2))
    embed = np.zeros((len(regions), len(classes), len(keys)))

    def base(region: int, cls: WorkloadClass) -> float:
        return spec.platform.peak_rps * regions[region].traffic_share * spec.workload_classes[cls].share

    region_of = {r.name: i for i, r in enumerate(regions)}
    for (region_name, pool_name), load in traffic.loads.items():
        ri = region_of[region_name]
        column = index[(region_name, pool_name)]
        for cls, rps in load.per_class.items():
            if base(ri, cls) <= 0:
                continue
            target = embed if spec.is_embedding(load.pool) else table
            target[ri, classes.index(cls), column] += rps / base(ri, cls)
    for spill in traffic.spills:
        ri = region_of[spill.region]
        column = len(keys) + provider_tiers.index((spill.provider, spill.tier))
        table[ri, classes.index(spill.cls), column] += spill.rps / base(ri, spill.cls)
    for miss in traffic.unrouted:
        ri = region_of[miss.region]
        table[ri, classes.index(miss.cls), unrouted_col] += miss.rps / base(ri, miss.cls)
    table[:, :, cache_col] = np.clip(1.0 - table.sum(axis=2), 0.0, 1.0)
    return Routing(dests, table, embed, cache_col, unrouted_col)


def priority_mix(spec: PlatformSpec) -> F64:
    """P(priority level | region, class), as the planner's pool model takes it (``pool_performance.priority_levels``)."""
    regions, classes = spec.regions, list(spec.workload_classes)
    mix = np.zeros((len(regions), len(classes), len(LEVELS)))
    for ri, region in enumerate(regions):
        for ci, cls in enumerate(classes):
            mix[ri, ci] = priority_levels(spec, region.name, cls)
    return mix


@dataclass
class Requests:
    """A batch of requests (one window's arrivals, or the run's trace); embedding calls are requests of their own.

    Drawn by ``tokenplane.sim.arrivals``, sorted by arrival, so every pool's own requests are in arrival order.
    """

    arrival: F64  # seconds after the start
    region: I64
    cls: I64  # index into spec.workload_classes
    kind: I64  # Kind
    dest: I64  # placement index for POOL, provider index (spec.providers) for PROVIDER, -1 otherwise
    tier: I64  # for PROVIDER, which of its models (index into Tier); -1 otherwise
    prompt: I64
    output: I64  # 0 for embedding calls
    priority: I64  # index into LEVELS
    embedding: npt.NDArray[np.bool_]
    origin: I64  # the placement it was routed to (-1: none); kept when it fails over to a provider
    weight: F64  # requests of the full traffic each one stands for: 1 at request level, 1/sampled share otherwise

    def __len__(self) -> int:
        return len(self.arrival)

    def take(self, rows: npt.NDArray[np.int64] | npt.NDArray[np.bool_]) -> Requests:
        """The requests at ``rows`` (indices or a mask), as copies."""
        return Requests(*(getattr(self, name)[rows] for name in _REQUEST_FIELDS))

    def concat(self, other: Requests) -> Requests:
        return Requests(*(np.concatenate([getattr(self, n), getattr(other, n)]) for n in _REQUEST_FIELDS))


_REQUEST_FIELDS = tuple(f.name for f in fields(Requests))


SAMPLE_REPLICAS = 2  # replicas per pool simulated request by request in sampled mode (tokenplane.sim.simulate)


class Initial(StrEnum):
    """The replicas each pool has when the run starts."""

    SETTLED = "settled"  # what the autoscaler settles on for the starting load: a platform already running
    MIN = "min"  # min_replicas: a platform that was idle when the traffic arrived


class Fidelity(StrEnum):
    """How much of the traffic is simulated request by request; see the module docstring."""

    REQUEST = "request"
    SAMPLED = "sampled"  # sampled replicas, every period
    AGGREGATE = "aggregate"  # sampled replicas, and steady stretches replayed from the last simulated period


# Request level simulates about 160,000 requests per wall second on two cores (BENCHMARKS.md: 1.19M requests in
# 7.5 s); up to this many arrivals it finishes in about 20 s, and past it `auto` picks aggregate, whose wall time
# grows with the periods simulated rather than the requests (a 24 h day at 10,000 RPS in about a minute).
AUTO_REQUEST_LIMIT = 3_000_000


def expected_arrivals(rps: float, duration_s: float, bursts: tuple[Burst, ...]) -> float:
    """An upper bound on a run's arrivals: the peak rate throughout, plus each burst's surge once per day."""
    days = max(1.0, math.ceil(duration_s / 86_400))
    surge = sum((b.factor - 1) * rps * min(b.duration_s, duration_s) for b in bursts if b.factor > 1)
    return rps * duration_s + days * surge


def auto_fidelity(rps: float, duration_s: float, bursts: tuple[Burst, ...]) -> tuple[Fidelity, str]:
    """``--fidelity auto``: request level for a short run, aggregate for a long one, and why, for the output."""
    arrivals = expected_arrivals(rps, duration_s, bursts)
    if arrivals <= AUTO_REQUEST_LIMIT:
        return (
            Fidelity.REQUEST,
            f"auto: about {arrivals:,.0f} arrivals at peak, request level up to {AUTO_REQUEST_LIMIT:,}",
        )
    return Fidelity.AGGREGATE, (
        f"auto: about {arrivals:,.0f} arrivals at peak, over the {AUTO_REQUEST_LIMIT:,} simulated request by request "
        "in about 20 s; --fidelity request forces every request"
    )


@dataclass(frozen=True)
class SimConfig:
    """One run of the workbench.

    Attributes:
        rps: peak arrival rate across all regions; ``None`` takes the spec's ``platform.peak_rps``.
        duration_s: simulated seconds.
        profile: flat, or the business-day curve of ``workload.DIURNAL_HOURLY`` (``rps`` is its peak).
        bursts: surges on top of the profile, e.g. 3x at 09:00 for 15 minutes.
        start_s: the simulated clock at the start, in seconds after Monday 00:00.
        seed: fixes every random draw: the same seed gives the same run.
        initial: replicas at the start.
        fidelity: every request, or a per-pool sample of replicas.
        fidelity_reason: why ``--fidelity auto`` chose ``fidelity``; ``None`` when it was asked for.
        sample_replicas: in sampled mode, replicas per pool simulated request by request.
        trace: keep every request's outcome (``SimResult.requests`` / ``outcome``): memory grows with
            the run, so only for short runs and tests.
        balance: how the gateway spreads a pool's arrivals over its replicas. ``ROUND_ROBIN`` deals
            them as the planner prices them; the others run the model gateway's ``choose`` per
            request on the replicas' state (``tokenplane.sim.gateway.balance``), at request fidelity only.
        model_gateways: model gateway processes, each balancing on what it sent itself; a pool's
            requests reach them at random (the AI gateway's connections to their Service). Above 1,
            at request fidelity only.
        sharing: how those processes share the replicas (``tokenplane.model.balancing.Sharing``;
            ``tokenplane.sim.gateway.balance``); the default is what the model gateway runs.
        gateway_skew: ``None``: each request reaches a process chosen uniformly at random (what is
            deployed: the callers deal per request over the processes, ``serving.modelgw.peers``,
            and several callers' turns add up to no less even than that); a number
            ``a``: each pool's requests are split among the processes in shares drawn once per run
            from a Dirichlet(``a``, ..., ``a``), as keep-alive connections pinned per connection by
            kube-proxy make them uneven (``a = 1``: every split equally likely; c connections
            pinned at random spread about as a Dirichlet((c - 1) / k)).
        gateway_dealt: each pool's requests are dealt over the processes in turn, as one AI gateway
            process's ``serving.modelgw.peers.PeerDealer`` deals them (several processes' turns
            interleave: between this and ``gateway_skew=None``).
    """

    rps: float | None = None
    duration_s: float = 60.0
    profile: Profile = Profile.FLAT
    bursts: tuple[Burst, ...] = ()
    start_s: float = 0.0
    seed: int = 0
    initial: Initial = Initial.SETTLED
    fidelity: Fidelity = Fidelity.REQUEST
    fidelity_reason: str | None = None  # why --fidelity auto chose it, stated in the output; None when asked for
    sample_replicas: int = SAMPLE_REPLICAS
    trace: bool = False
    balance: BalancePolicy = BalancePolicy.ROUND_ROBIN
    model_gateways: int = 1
    sharing: Sharing = DEPLOYED_SHARING
    gateway_skew: float | None = None
    gateway_dealt: bool = False

    @property
    def per_request(self) -> bool:
        """Whether the gateway chooses each request's replica on the engine's state, not by dealing."""
        return self.balance is not BalancePolicy.ROUND_ROBIN or self.model_gateways > 1

    def __post_init__(self) -> None:
        if self.model_gateways < 1:
            raise ValueError(f"SimConfig(model_gateways={self.model_gateways}) must be at least 1")
        if self.gateway_dealt and self.gateway_skew is not None:
            raise ValueError("SimConfig: gateway_dealt deals evenly in turn; it takes no gateway_skew")
        if self.gateway_skew is not None and not self.gateway_skew > 0:
            raise ValueError(f"SimConfig(gateway_skew={self.gateway_skew}) must be positive, or None for even")
        if self.per_request and self.fidelity is not Fidelity.REQUEST:
            raise ValueError(
                f"SimConfig(balance={self.balance.value!r}, model_gateways={self.model_gateways}) needs every "
                f"replica simulated: fidelity={self.fidelity.value!r} feeds sampled replicas every n-th arrival; "
                "use fidelity='request'"
            )
