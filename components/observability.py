"""Observability: Prometheus and Grafana (kube-prometheus-stack), the dashboards, and an OTel collector."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random
import yaml

from tokenplane.components import dashboards, kube
from tokenplane.components.base import Component
from tokenplane.components.finops import FINOPS_ALERTS
from tokenplane.components.finops_dashboard import PLUGIN as FINOPS_PLUGIN
from tokenplane.components.gateway_config import GatewayConfig
from tokenplane.components.iam import OidcCluster, irsa_role
from tokenplane.components.kube import Namespace
from tokenplane.components.metering import APP as METERING_APP
from tokenplane.components.naming import LABEL_POOL, NS_BATCH, NS_DATA, NS_GATEWAY, NS_KEDA, NS_MONITORING, app_labels
from tokenplane.components.pins import KUBE_PROMETHEUS_STACK_CHART, OTEL_COLLECTOR_IMAGE
from tokenplane.components.vector_db import STORAGE_CLASS
from tokenplane.spec import Budget, PlatformSpec, Pool, Pricing, Region
from tokenplane.spec import Observability as ObservabilitySettings

OTEL_APP = "otel-collector"
OTLP_GRPC, OTLP_HTTP, OTEL_METRICS = 4317, 4318, 8889
OTEL_HEALTH = 13133  # the collector's health_check extension: what the kubelet probes
GRAFANA_URL = "http://kube-prometheus-stack-grafana.monitoring.svc"
GRAFANA_ADMIN_SECRET = "grafana-admin"  # created here; the chart's own default password is public
XRAY_POLICY = "arn:aws:iam::aws:policy/AWSXRayDaemonWriteAccess"  # PutTraceSegments, PutTelemetryRecords, sampling
RETENTION_SHARE = 0.85  # of the volume Prometheus may fill before deleting its oldest blocks: the WAL needs the rest

# Scrape every pod that opts in with prometheus.io/* annotations, and carry the pool label over,
# so that KEDA's queries and the dashboards can select by pool.
POD_SCRAPE: dict[str, Any] = {
    "job_name": "tokenplane-pods",
    "kubernetes_sd_configs": [{"role": "pod"}],
    # The DCGM exporter labels each GPU series with the pod and namespace USING the GPU; without honor_labels the
    # target's own labels (the exporter's pod) replace them, and every per-pool GPU query matches nothing.
    "honor_labels": True,
    "relabel_configs": [
        {"source_labels": ["__meta_kubernetes_pod_annotation_prometheus_io_scrape"], "action": "keep", "regex": "true"},
        {
            "source_labels": ["__meta_kubernetes_pod_annotation_prometheus_io_path"],
            "action": "replace",
            "target_label": "__metrics_path__",
            "regex": "(.+)",
        },
        {
            "source_labels": ["__address__", "__meta_kubernetes_pod_annotation_prometheus_io_port"],
            "action": "replace",
            "regex": "([^:]+)(?::\\d+)?;(\\d+)",
            "replacement": "$1:$2",
            "target_label": "__address__",
        },
        {"source_labels": ["__meta_kubernetes_pod_label_tokenplane_io_pool"], "target_label": "pool"},
        {"source_labels": ["__meta_kubernetes_pod_label_tokenplane_io_region"], "target_label": "region"},
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
    ],
}


@dataclass(frozen=True, kw_only=True)
class ObservabilityArgs:
    """Prometheus, Grafana, the dashboards and the OTel collector in one region: only what they read.

    ``from_spec`` takes them from a platform spec, ``from_config`` from a hand-written ``GatewayConfig``; a
    program may also name them one by one.

    Args:
        cloud_region: the AWS region the collector sends traces to X-Ray in.
        namespace: the ``monitoring`` namespace (``Namespace.create`` or ``Namespace.existing``). Only that
            name: the pools' autoscalers and every NetworkPolicy address Prometheus there.
        cluster: the ``Cluster`` (or ``ExistingCluster``) whose OIDC provider the collector's X-Ray role trusts.
        tags: AWS tags on that role.
        pools: the pools the cost dashboard prices by their running GPU nodes.
        budget: the $/h cap the cost dashboard's "Budget used" panel divides by.
        pricing: instance price overrides for the cost dashboard (the catalog's on-demand prices otherwise).
        settings: retention, scrape interval, Prometheus's volume, the dashboards and the trace sampling.
        finops_alerts: the FinOps plane's alerts (ledger lag, budgets) and Grafana's ClickHouse datasource:
            only where a metering consumer and its ledger run (``Finops``); without them the alerts would
            read series nothing exports.
    """

    cloud_region: str
    namespace: Namespace
    cluster: OidcCluster
    tags: dict[str, str]
    pools: Sequence[Pool]
    budget: Budget
    pricing: Pricing = field(default_factory=Pricing)
    settings: ObservabilitySettings = field(default_factory=ObservabilitySettings)
    finops_alerts: bool = False

    @classmethod
    def from_spec(
        cls,
        spec: PlatformSpec,
        region: Region,
        *,
        namespace: Namespace,
        cluster: OidcCluster,
        tags: dict[str, str],
    ) -> ObservabilityArgs:
        """A spec's region: the spec's observability settings, its pools, budget and prices, and FinOps alerts
        when its FinOps plane runs."""
        return cls(
            cloud_region=region.cloud_region,
            namespace=namespace,
            cluster=cluster,
            tags=tags,
            pools=spec.pools,
            budget=spec.budget,
            pricing=spec.pricing,
            settings=spec.observability,
            finops_alerts=spec.finops.enabled,
        )

    @classmethod
    def from_config(
        cls, config: GatewayConfig, *, namespace: Namespace, cluster: OidcCluster, tags: dict[str, str]
    ) -> ObservabilityArgs:
        """The region, pools and budget of a ``GatewayConfig``, with the default settings and no FinOps alerts
        (a program that runs the FinOps plane sets ``finops_alerts``)."""
        return cls(
            cloud_region=config.region.cloud_region,
            namespace=namespace,
            cluster=cluster,
            tags=tags,
            pools=config.pools,
            budget=config.budget,
        )


def collector_config(settings: ObservabilitySettings, cloud_region: str) -> dict[str, Any]:
    """Traces sampled per the settings go to X-Ray in ``cloud_region``; span metrics are exposed for Prometheus."""
    return {
        "receivers": {
            "otlp": {
                "protocols": {
                    "grpc": {"endpoint": f"0.0.0.0:{OTLP_GRPC}"},
                    "http": {"endpoint": f"0.0.0.0:{OTLP_HTTP}"},
                }
            }
        },
        "processors": {
            "memory_limiter": {"check_interval": "1s", "limit_percentage": 80, "spike_limit_percentage": 20},
            "probabilistic_sampler": {"sampling_percentage": settings.tracing.sample_ratio * 100},
            "batch": {"timeout": "5s", "send_batch_size": 1024},
        },
        "exporters": {
            "awsxray": {"region": cloud_region},
            "prometheus": {"endpoint": f"0.0.0.0:{OTEL_METRICS}"},
        },
        # Up once every pipeline has started: the kubelet's readiness and liveness probe.
        "extensions": {"health_check": {"endpoint": f"0.0.0.0:{OTEL_HEALTH}"}},
        "service": {
            "extensions": ["health_check"],
            "pipelines": {
                "traces": {
                    "receivers": ["otlp"],
                    "processors": ["memory_limiter", "probabilistic_sampler", "batch"],
                    "exporters": ["awsxray"],
                },
                "metrics": {
                    "receivers": ["otlp"],
                    "processors": ["memory_limiter", "batch"],
                    "exporters": ["prometheus"],
                },
            },
        },
    }


class Observability(Component):
    """kube-prometheus-stack, the Grafana dashboards and an OTel collector in the ``monitoring`` namespace."""

    MODULE = "observability"

    otlp_endpoint: str
    grafana_url: str

    def __init__(self, name: str, args: ObservabilityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        if args.namespace.name != NS_MONITORING:
            raise ValueError(
                f"Observability {name}: namespace {args.namespace.name!r} is not {NS_MONITORING!r}; the pools' "
                f"KEDA triggers ({kube.PROMETHEUS_URL}) and the NetworkPolicies address Prometheus in "
                f"{NS_MONITORING!r}, so create that one"
            )
        self.wait_for(*args.namespace.after())
        obs = args.settings
        chart, version, repo = KUBE_PROMETHEUS_STACK_CHART
        values = {
            "prometheus": {
                "prometheusSpec": {
                    "retention": f"{obs.metrics_retention_days}d",
                    "scrapeInterval": f"{obs.scrape_interval_seconds}s",
                    "additionalScrapeConfigs": [POD_SCRAPE],
                    "podMonitorSelectorNilUsesHelmValues": False,
                    "serviceMonitorSelectorNilUsesHelmValues": False,
                    # Metrics survive a Prometheus pod's move or restart: a gp3 volume (EBS CSI, encrypted)
                    # instead of the chart's emptyDir, and a size cap below the volume's so that old blocks go
                    # before the disk is full.
                    "retentionSize": f"{int(obs.metrics_volume_gib * RETENTION_SHARE)}GiB",
                    "storageSpec": {
                        "volumeClaimTemplate": {
                            "spec": {
                                "storageClassName": STORAGE_CLASS,
                                "accessModes": ["ReadWriteOnce"],
                                "resources": {"requests": {"storage": f"{obs.metrics_volume_gib}Gi"}},
                            }
                        }
                    },
                }
            },
            "grafana": {
                "sidecar": {
                    "dashboards": {"enabled": True, "label": "grafana_dashboard", "searchNamespace": NS_MONITORING}
                },
                "admin": {
                    "existingSecret": GRAFANA_ADMIN_SECRET,
                    "userKey": "admin-user",
                    "passwordKey": "admin-password",
                },
            },
            "alertmanager": {"enabled": True},
            # kube-state-metrics exports no node label unless allowed: the cost dashboard counts GPU nodes per
            # pool with kube_node_labels{label_tokenplane_io_pool=...}.
            "kube-state-metrics": {"metricLabelsAllowlist": [f"nodes=[{LABEL_POOL}]"]},
        }
        if args.finops_alerts:
            # The FinOps plane's alerts (lag, budgets) and Grafana's ClickHouse datasource (components/finops.py).
            values["additionalPrometheusRulesMap"] = {"tokenplane-finops": {"groups": FINOPS_ALERTS}}
            values["grafana"]["plugins"] = [FINOPS_PLUGIN]  # type: ignore[index]  # the dict literal above
        password = random.RandomPassword(self.child("grafana-password"), length=32, special=False, opts=self.opts())
        admin = k8s.core.v1.Secret(
            self.child("grafana-admin"),
            metadata={"name": GRAFANA_ADMIN_SECRET, "namespace": NS_MONITORING},
            type="Opaque",
            string_data={"admin-user": "admin", "admin-password": password.result},
            opts=self.opts(),
        )
        release = k8s.helm.v3.Release(
            self.child("kube-prometheus-stack"),
            name="kube-prometheus-stack",
            chart=chart,
            version=version,
            namespace=NS_MONITORING,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=repo),
            values=values,
            opts=self.opts(depends_on=[admin]),  # Grafana reads its admin login from the Secret at start
        )
        for board in obs.dashboards:
            content = dashboards.build(board, pools=args.pools, budget=args.budget, pricing=args.pricing)
            k8s.core.v1.ConfigMap(
                self.child("dashboard", board),
                metadata={
                    "name": f"tokenplane-dashboard-{board}",
                    "namespace": NS_MONITORING,
                    "labels": {"grafana_dashboard": "1", "app.kubernetes.io/part-of": "tokenplane"},
                },
                data={f"tokenplane-{board}.json": json.dumps(content, sort_keys=True)},
                opts=self.opts(depends_on=[release]),
            )
        # Inside the namespace Grafana reads Prometheus and Prometheus reaches Alertmanager;
        # KEDA, in its own namespace, queries Prometheus for the pools' scaling signals.
        k8s.networking.v1.NetworkPolicy(
            self.child("netpol-same-namespace"),
            metadata={"name": "allow-same-namespace", "namespace": NS_MONITORING},
            spec={"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [{"podSelector": {}}]}]},
            opts=self.opts(),
        )
        kube.allow_ingress(
            self.child("netpol-keda"),
            namespace=NS_MONITORING,
            app="prometheus",
            port=9090,
            # KEDA's Prometheus triggers, and the metering consumer, which reads each pool's replica count
            # from Prometheus to price idle capacity (serving/finops/capacity.py).
            sources=[kube.peer(NS_KEDA), kube.peer(NS_DATA, METERING_APP)],
            opts=self.opts(),
            name="prometheus-clients",
        )
        self._collector(args)
        self.otlp_endpoint = f"http://{OTEL_APP}.{NS_MONITORING}.svc:{OTLP_GRPC}"
        self.grafana_url = GRAFANA_URL
        self.grafana_admin_password = pulumi.Output.secret(password.result)
        self.register_outputs(
            {
                "grafana_url": self.grafana_url,
                "otlp_endpoint": self.otlp_endpoint,
                "grafana_admin_password": self.grafana_admin_password,
            }
        )

    def _collector(self, args: ObservabilityArgs) -> None:
        labels = app_labels(OTEL_APP, "telemetry")
        # The awsxray exporter signs PutTraceSegments with the pod's credentials: its own role, X-Ray writes only.
        role = irsa_role(
            self.child("otel-role"),
            namespace=NS_MONITORING,
            service_account=OTEL_APP,
            oidc_provider_arn=args.cluster.oidc_provider_arn,
            oidc_issuer=args.cluster.oidc_issuer,
            policy=None,
            managed_policies=(XRAY_POLICY,),
            tags=args.tags,
            opts=self.opts(),
        )
        account = k8s.core.v1.ServiceAccount(
            self.child("otel-sa"),
            metadata={
                "name": OTEL_APP,
                "namespace": NS_MONITORING,
                "labels": labels,
                "annotations": {"eks.amazonaws.com/role-arn": role.arn},
            },
            opts=self.opts(),
        )
        config = k8s.core.v1.ConfigMap(
            self.child("otel-config"),
            metadata={"name": f"{OTEL_APP}-config", "namespace": NS_MONITORING, "labels": labels},
            data={"config.yaml": yaml.safe_dump(collector_config(args.settings, args.cloud_region), sort_keys=True)},
            opts=self.opts(),
        )
        ports = [("otlp-grpc", OTLP_GRPC), ("otlp-http", OTLP_HTTP), ("metrics", OTEL_METRICS)]
        k8s.apps.v1.Deployment(
            self.child("otel"),
            metadata={"name": OTEL_APP, "namespace": NS_MONITORING, "labels": labels},
            spec={
                "replicas": 2,
                "selector": {"matchLabels": {"app.kubernetes.io/name": OTEL_APP}},
                "template": {
                    "metadata": {
                        "labels": labels,
                        "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": str(OTEL_METRICS)},
                    },
                    "spec": {
                        "serviceAccountName": OTEL_APP,
                        # IRSA's token is a projected volume of its own; no processor here reads the Kubernetes API.
                        "automountServiceAccountToken": False,
                        "securityContext": kube.pod_security(),
                        "containers": [
                            {
                                "name": OTEL_APP,
                                "image": OTEL_COLLECTOR_IMAGE,
                                "args": ["--config=/conf/config.yaml"],
                                "ports": [
                                    *({"name": n, "containerPort": p} for n, p in ports),
                                    {"name": "health", "containerPort": OTEL_HEALTH},
                                ],
                                "readinessProbe": {"httpGet": {"path": "/", "port": "health"}, "periodSeconds": 10},
                                "livenessProbe": {
                                    "httpGet": {"path": "/", "port": "health"},
                                    "periodSeconds": 20,
                                    "failureThreshold": 6,
                                },
                                "resources": {
                                    "requests": {"cpu": "200m", "memory": "256Mi"},
                                    "limits": {"cpu": "1", "memory": "1Gi"},
                                },
                                "securityContext": kube.container_security(),
                                "volumeMounts": [{"name": "config", "mountPath": "/conf", "readOnly": True}],
                            }
                        ],
                        "volumes": [{"name": "config", "configMap": {"name": f"{OTEL_APP}-config"}}],
                    },
                },
            },
            opts=self.opts(depends_on=[config, account]),
        )
        k8s.core.v1.Service(
            self.child("otel-service"),
            metadata={"name": OTEL_APP, "namespace": NS_MONITORING, "labels": labels},
            spec={
                "selector": {"app.kubernetes.io/name": OTEL_APP},
                "ports": [{"name": n, "port": p, "targetPort": p} for n, p in ports],
            },
            opts=self.opts(),
        )
        kube.pdb(self.child("otel-pdb"), namespace=NS_MONITORING, app=OTEL_APP, opts=self.opts())
        kube.allow_ingress(
            self.child("otel-netpol"),
            namespace=NS_MONITORING,
            app=OTEL_APP,
            port=OTLP_GRPC,
            sources=[kube.peer(NS_GATEWAY), kube.peer(NS_BATCH)],
            opts=self.opts(),
        )
