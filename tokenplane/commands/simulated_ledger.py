"""A workbench run written into the ledger: "what would this day cost each tenant", before deploying.

``tokenplane simulate ... --events LEDGER`` writes the run in the ledger's own schema, so ``tokenplane finops
LEDGER`` reads a simulated day with the queries it uses for a real one:

- ``pool_replicas``: per minute and pool, the replicas the simulated autoscaler billed (starting, ready and
  draining, plus the warm pool: ``usd_per_hour`` of each autoscaler period over the price of one replica), so
  the simulated node bill is the bill the simulator itself reports;
- ``usage_minutes``: per minute, pool and tenant, the requests served (each period's arrivals up to its
  service rate) and the tokens the run's tally counted for the pool, spread over the minutes as the requests
  were; charged at the plan's $ per 1M tokens as the gateway's quota would be.

A simulated day of byteion is about 10^9 requests: no per-request table should hold that, so the run is
written as the per-minute rollup the chargeback reads (``usage_minutes``), not as raw ``usage_events``.
The workbench has no tenants; the served tokens of a pool are split over the spec's tenants that may use it
(allowed tier, and residency matching the region's jurisdiction) in proportion to their TPM limits.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tokenplane.serving.finops.rates import PoolRate, pool_rates
from tokenplane.serving.finops.store import Store
from tokenplane.spec import PlatformSpec

if TYPE_CHECKING:
    from tokenplane.sim.metrics import SimResult

# The simulated week's Monday 00:00 (the workbench's day 0 is a Monday): a fixed date, so runs compare.
SIM_EPOCH = int(datetime(2026, 1, 5, tzinfo=UTC).timestamp())
UNATTRIBUTED = "(unattributed)"  # served tokens of a pool no spec tenant may use
SECONDS_PER_MINUTE = 60
INSERT_CHUNK = 50_000  # rows per INSERT: a byteion day is ~10^6 minute rows, written in parts of bounded size


def tenant_weights(spec: PlatformSpec, region: str, tier: str) -> dict[str, float]:
    """The tenants that may be served by a ``tier`` pool in ``region``, weighted by their TPM limits."""
    jurisdiction = spec.region(region).jurisdiction
    weights = {
        t.name: float(t.tpm)
        for t in spec.tenants
        if tier in {x.value for x in t.allowed_tiers} and (t.residency is None or t.residency == jurisdiction)
    }
    return weights or {UNATTRIBUTED: 1.0}


def ledger_rows(result: SimResult, rates: dict[tuple[str, str], PoolRate]) -> tuple[list[Any], list[Any]]:
    """(usage_minutes rows, pool_replicas rows) for a run."""
    spec, source = result.spec, f"simulate:{result.spec.platform.name}"
    origin = SIM_EPOCH + int(result.config.start_s)
    usage: list[dict[str, Any]] = []
    replicas: list[dict[str, Any]] = []
    for setup in result.pools:
        rate = rates[(setup.region, setup.name)]
        billed: dict[int, float] = defaultdict(float)  # minute -> replica-seconds
        served: dict[int, float] = defaultdict(float)  # minute -> requests
        before = 0.0
        for record in setup.timeline:
            dt = record.t_s - before
            minute = (origin + int(before)) // SECONDS_PER_MINUTE * SECONDS_PER_MINUTE
            before = record.t_s
            if rate.usd_per_replica_hour > 0:
                billed[minute] += record.usd_per_hour / rate.usd_per_replica_hour * dt
            served[minute] += min(record.arrival_rps, record.service_rps) * dt
        pool_tokens = float(result.tally.pool_tokens[setup.index])
        per_request = pool_tokens / sum(served.values()) if sum(served.values()) > 0 else 0.0
        weights = tenant_weights(spec, setup.region, setup.tier.value)
        total_weight = sum(weights.values())
        model = spec.pool(setup.name).model
        for minute, replica_seconds in sorted(billed.items()):
            replicas.append(
                {
                    "minute": minute,
                    "region": setup.region,
                    "pool": setup.name,
                    "replicas": replica_seconds / SECONDS_PER_MINUTE,
                    "usd_per_replica_hour": rate.usd_per_replica_hour,
                    "tokens_per_replica_second": rate.tokens_per_replica_second,
                    "planned_usd_per_mtok": rate.planned_usd_per_mtok,
                    "source": source,
                }
            )
        for minute, requests in sorted(served.items()):
            for tenant, weight in weights.items():
                share = requests * weight / total_weight
                tokens = round(share * per_request)
                usage.append(
                    {
                        "minute": minute,
                        "tenant": tenant,
                        "region": setup.region,
                        "target_kind": "pool",
                        "target": setup.name,
                        "model": model,
                        "requests": round(share),
                        "prompt_tokens": tokens,  # the workbench does not split prompt from output here
                        "completion_tokens": 0,
                        "cost_usd": tokens * rate.planned_usd_per_mtok / 1_000_000,
                        "source": source,
                    }
                )
    return usage, replicas


def write_run(store: Store, result: SimResult) -> tuple[int, int]:
    """Replace this spec's earlier simulated rows with ``result``'s; returns (usage rows, replica rows)."""
    source = f"simulate:{result.spec.platform.name}"
    for table in ("usage_minutes", "pool_replicas"):
        store.execute(f"ALTER TABLE {table} DELETE WHERE source = '{source}' SETTINGS mutations_sync = 1")
    usage, replicas = ledger_rows(result, pool_rates(result.spec))
    for table, rows in (("usage_minutes", usage), ("pool_replicas", replicas)):
        for i in range(0, len(rows), INSERT_CHUNK):
            store.insert(table, rows[i : i + INSERT_CHUNK])
    return len(usage), len(replicas)
