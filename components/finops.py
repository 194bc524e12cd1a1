"""The FinOps plane of one region: the ClickHouse ledger and the metering consumer that fills it.

Region calls ``finops_plane`` when ``finops.enabled``; both live in the data namespace, next to Qdrant,
so that the consumer mounts the ledger's credentials Secret where ClickHouse keeps it.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from tokenplane.components import kube
from tokenplane.components.base import Component
from tokenplane.components.clickhouse import (
    DATABASE,
    HTTP_PORT,
    SERVER_CPU,
    USER,
    ClickHouse,
    ClickHouseArgs,
    server_replicas,
)
from tokenplane.components.finops_dashboard import datasource, finops_dashboard
from tokenplane.components.gateway import ServingDeps
from tokenplane.components.kube import Namespace
from tokenplane.components.metering import APP as CONSUMER
from tokenplane.components.metering import CONSUMER_CPU, CONSUMER_MAX_REPLICAS, MeteringConsumer, MeteringConsumerArgs
from tokenplane.components.naming import NS_MONITORING
from tokenplane.spec import PlatformSpec

# Prometheus alerts on the consumer's lag and the budgets' burn (Observability adds them to its rules).
FINOPS_ALERTS: list[dict[str, Any]] = [
    {
        "name": "tokenplane-finops",
        "rules": [
            {
                "alert": "FinopsConsumerLagging",
                "expr": "sum by (region) (tokenplane_finops_consumer_lag) > 500000",
                "for": "15m",
                "labels": {"severity": "warning"},
                "annotations": {"summary": "The metering consumer is over 500k events behind: chargeback is stale"},
            },
            {
                "alert": "TenantBudgetProjectedOver",
                "expr": 'max by (scope) (tokenplane_finops_budget_ratio{kind="projected"}) >= 1',
                "for": "30m",
                "labels": {"severity": "warning"},
                "annotations": {"summary": "{{ $labels.scope }} ends the month over budget at the last hour's burn"},
            },
            {
                "alert": "TenantBudgetOver",
                "expr": 'max by (scope) (tokenplane_finops_budget_ratio{kind="spent"}) >= 1',
                "labels": {"severity": "critical"},
                "annotations": {"summary": "{{ $labels.scope }} has spent past its monthly budget"},
            },
        ],
    }
]


def finops_cpu_at_maxima(spec: PlatformSpec) -> float:
    """vCPUs the plane requests on the system nodes at its maxima: the ledger's servers and the consumers."""
    if not spec.finops.enabled:
        return 0.0
    servers = server_replicas(spec.platform.environment.value) * SERVER_CPU
    return servers + CONSUMER_MAX_REPLICAS * CONSUMER_CPU


def finops_plane(
    region: Component,
    spec: PlatformSpec,
    deps: ServingDeps,
    namespace: Namespace,
    registry_bucket: pulumi.Input[str],
    cluster: Any,
    opts: pulumi.ResourceOptions,
) -> tuple[ClickHouse, MeteringConsumer]:
    """ClickHouse and the metering consumer of ``spec``'s region that ``deps`` serve, children of ``region``."""
    store = ClickHouse(
        region.child("clickhouse"),
        ClickHouseArgs(
            environment=spec.platform.environment,
            namespace=namespace,
            backup_bucket=registry_bucket,
            backup_every_hours=spec.finops.backup_every_hours,
            region=deps.region.name,
            cluster=cluster,
            clients=[kube.peer(namespace.name, CONSUMER)],
            tags=deps.tags,
        ),
        opts,
    )
    _grafana(region, store, opts)
    consumer = MeteringConsumer(
        region.child("finops-consumer"),
        MeteringConsumerArgs(deps=deps, namespace=namespace, store_url=store.url),
        pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[store])),
    )
    return store, consumer


def _grafana(region: Component, store: ClickHouse, opts: pulumi.ResourceOptions) -> None:
    """The ledger as a Grafana datasource (a Secret: it holds the password) and the FinOps dashboard."""
    host = f"clickhouse.{store.namespace}.svc"
    k8s.core.v1.Secret(
        region.child("finops-datasource"),
        metadata={
            "name": f"tokenplane-finops-datasource-{store.region}",
            "namespace": NS_MONITORING,
            "labels": {"grafana_datasource": "1", "app.kubernetes.io/part-of": "tokenplane"},
        },
        type="Opaque",
        string_data={
            "finops.yaml": store.password.apply(
                lambda secret: yaml.safe_dump(datasource(host, HTTP_PORT, DATABASE, USER, secret))
            )
        },
        opts=opts,
    )
    k8s.core.v1.ConfigMap(
        region.child("finops-dashboard"),
        metadata={
            "name": f"tokenplane-dashboard-finops-{store.region}",
            "namespace": NS_MONITORING,
            "labels": {"grafana_dashboard": "1", "app.kubernetes.io/part-of": "tokenplane"},
        },
        data={"tokenplane-finops.json": json.dumps(finops_dashboard(), sort_keys=True)},
        opts=opts,
    )
