"""Limits three more AWS APIs check at create time, which the provider's schema does not: an ElastiCache Serverless
cache's usage limits, a Budgets notification's type against the budget's period, and a Secrets Manager secret's
replica Regions. Each refusal fails ``pulumi up`` at that resource (rule ``aws-api-values``):

- **ElastiCache** ``CreateServerlessCache``: ``CacheUsageLimits.ECPUPerSecond`` ``Maximum``/``Minimum`` of 1,000 to
  15,000,000 and ``DataStorage`` ``Maximum``/``Minimum`` of 1 to 5,000 GB, each minimum at most its maximum (the
  provider documents both ranges: https://www.pulumi.com/registry/packages/aws/api-docs/elasticache/serverlesscache/,
  ``ecpu_per_second`` "Must be between 1,000 and 15,000,000", ``data_storage`` "Must be between 1 and 5,000";
  https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/Scaling.html). Read on the schema's ``ecpuPerSeconds`` list
  and on the singular ``ecpu_per_second`` block a program may pass (the Terraform block's own name).
- **Budgets** ``CreateBudget``: a ``FORECASTED`` notification only on a ``MONTHLY``, ``QUARTERLY`` or ``ANNUALLY``
  budget; a ``DAILY`` budget takes ``ACTUAL`` alerts only (AWS Budgets user guide, "Creating a cost budget":
  https://docs.aws.amazon.com/cost-management/latest/userguide/budgets-create.html, "Daily budgets don't support
  enabling forecasted alerts"; reported refused: https://github.com/JiRaska/open-bank-oss/pull/226). The API
  reference's ``Notification`` does not state it.
- **Secrets Manager** ``CreateSecret`` / ``ReplicateSecretToRegions``: a replica Region other than the secret's own,
  each named once (the former "InvalidParameterException: Invalid replica region", the latter InvalidParameterException,
  its exact text not confirmed;
  https://docs.aws.amazon.com/secretsmanager/latest/userguide/create-manage-multi-region-secrets.html: a replica is a
  copy in another Region). The secret's Region is its provider's, judged only where the render knows it.

Cannot see: values unknown at render time (outputs, secrets), a secret whose provider's Region is not known offline.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from tokenplane.proof.deployability.aws_replay import known_cloud_region
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, number
from tokenplane.proof.render import RenderedResource

SERVERLESS_CACHE = "aws:elasticache/serverlessCache:ServerlessCache"
BUDGET = "aws:budgets/budget:Budget"
SECRET = "aws:secretsmanager/secret:Secret"
# Budget time units that take a FORECASTED notification (DAILY takes ACTUAL only).
FORECAST_PERIODS = frozenset({"MONTHLY", "QUARTERLY", "ANNUALLY"})


class Limit(NamedTuple):
    api: str
    low: int
    high: int
    unit: str


# cacheUsageLimits block -> (the spellings a program may render it under, its limit).
USAGE_LIMITS: dict[str, tuple[tuple[str, ...], Limit]] = {
    "ecpuPerSecond": (
        ("ecpuPerSeconds", "ecpuPerSecond", "ecpu_per_second", "ecpu_per_seconds"),
        Limit("ECPUPerSecond", 1_000, 15_000_000, "ECPU/s"),
    ),
    "dataStorage": (("dataStorage", "data_storage"), Limit("DataStorage", 1, 5_000, "GB")),
}


def check(graph: Graph, rule: str) -> Iterator[Finding]:
    for cache in graph.of_type(SERVERLESS_CACHE):
        yield from _usage_limits(cache, rule)
    for budget in graph.of_type(BUDGET):
        yield from _forecast(budget, rule)
    for secret in graph.of_type(SECRET):
        yield from _replicas(graph, secret, rule)


def _blocks(limits: dict[str, Any], spellings: tuple[str, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for key in spellings:
        value = limits.get(key)
        out += [b for b in (value if isinstance(value, list) else [value]) if isinstance(b, dict)]
    return out


def _usage_limits(cache: RenderedResource, rule: str) -> Iterator[Finding]:
    limits = cache.inputs.get("cacheUsageLimits")
    if not isinstance(limits, dict):
        return
    for spellings, limit in USAGE_LIMITS.values():
        for block in _blocks(limits, spellings):
            bounds = {k: number(block.get(k)) for k in ("minimum", "maximum")}
            for key, value in bounds.items():
                if value is not None and not limit.low <= value <= limit.high:
                    yield Finding(
                        rule,
                        cache.urn,
                        f"ElastiCache refuses {cache.name}: cache_usage_limits {limit.api} {key} {value:,.0f} "
                        f"{limit.unit}, outside the {limit.low:,}-{limit.high:,} CreateServerlessCache takes "
                        "(InvalidParameterValueException), so the cache is never created",
                        f"set the {limit.api} {key} between {limit.low:,} and {limit.high:,} {limit.unit}",
                    )
            low, high = bounds["minimum"], bounds["maximum"]
            if low is not None and high is not None and low > high:
                yield Finding(
                    rule,
                    cache.urn,
                    f"ElastiCache refuses {cache.name}: cache_usage_limits {limit.api} minimum {low:,.0f} above its "
                    f"maximum {high:,.0f} (InvalidParameterValueException)",
                    f"set the {limit.api} minimum at or below its maximum",
                )


def _forecast(budget: RenderedResource, rule: str) -> Iterator[Finding]:
    period = budget.inputs.get("timeUnit")
    if not isinstance(period, str) or period in FORECAST_PERIODS:
        return
    for notification in budget.inputs.get("notifications") or []:
        if isinstance(notification, dict) and notification.get("notificationType") == "FORECASTED":
            yield Finding(
                rule,
                budget.urn,
                f"AWS Budgets refuses {budget.name}: a FORECASTED notification on a {period} budget; forecasted "
                "alerts exist only for MONTHLY, QUARTERLY and ANNUALLY budgets, a daily budget takes ACTUAL alerts "
                "only (CreateBudget: InvalidParameterException), so the budget and its alerts are never created",
                "use notification_type ACTUAL on the daily budget, or make the budget MONTHLY (with the daily "
                "limit x 30) to keep the forecasted alert",
            )
            return


def _replicas(graph: Graph, secret: RenderedResource, rule: str) -> Iterator[Finding]:
    replicas = secret.inputs.get("replicas")
    if not isinstance(replicas, list):
        return
    home = known_cloud_region(graph, secret.region)
    seen: set[str] = set()
    for replica in replicas:
        region = replica.get("region") if isinstance(replica, dict) else None
        if not isinstance(region, str) or not region:
            continue
        if region == home:
            yield Finding(
                rule,
                secret.urn,
                f"Secrets Manager refuses {secret.name}: a replica in {region}, the Region the secret itself lives "
                "in (InvalidParameterException: Invalid replica region), so the secret is never created",
                f"replicate to another Region than {region} (the disaster-recovery Region), or drop the replica "
                "when there is none",
            )
        elif region in seen:
            yield Finding(
                rule,
                secret.urn,
                f"Secrets Manager refuses {secret.name}: two replicas in {region}: a secret has at most one "
                "replica per Region, and AddReplicaRegions naming a Region twice is refused (InvalidParameterException)",
                f"keep one replica in {region}",
            )
        seen.add(region)
