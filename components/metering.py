"""MeteringConsumer: the usage, audit and batch topics into the FinOps ledger, scaled by KEDA on its lag.

The serving image's ``python -m tokenplane.serving.finops``: it reads the three topics (MSK, IAM auth) and writes each
event once into ClickHouse (``components/clickhouse.py``), records each pool's replica count every minute
from kube-state-metrics through Prometheus, and exports its lag and the budgets' burn for Prometheus.
KEDA adds a replica per ``LAG_PER_REPLICA`` records behind, up to the usage topic's partitions (a consumer
beyond them would sit idle in its group).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from tokenplane.components import kube
from tokenplane.components.base import Component
from tokenplane.components.clickhouse import CREDENTIALS_DIR, CREDENTIALS_MOUNT, credentials_volume
from tokenplane.components.gateway import CONFIG_DIR, ServingDeps, runtime_config, serving_pod_annotations
from tokenplane.components.iam import irsa_role, msk_statements, policy_document
from tokenplane.components.kube import PROMETHEUS_URL, Namespace
from tokenplane.components.naming import LABEL_REGION, NS_MONITORING, app_labels
from tokenplane.runtime_env import DEFAULT_METRICS_PORT as METRICS_PORT
from tokenplane.runtime_env import MSK_IAM, Var, env_list
from tokenplane.spec import TopicPurpose

APP = "finops-consumer"
CONSUMER_CPU = 1.0  # one core each: the consumer is one asyncio loop, CPU-bound on parsing (BENCHMARKS.md)
# Past the usage topic's partitions a consumer idles; past this, the ledger's inserts (not the consumers) bound
# throughput: 4 x ~10k events/s measured per core covers byteion's ~12k requests/s mean with 3x headroom.
CONSUMER_MAX_REPLICAS = 4
LAG_PER_REPLICA = 50_000  # records behind per consumer: ~5 s of one consumer's measured throughput (BENCHMARKS.md)


@dataclass(frozen=True, kw_only=True)
class MeteringConsumerArgs:
    """The metering consumer in one region.

    Args:
        deps: the region's image, Kafka and identity (``ServingDeps``).
        namespace: the ledger's namespace: the consumer mounts the ledger's credentials Secret from it.
        store_url: the ledger's URL without credentials (``ClickHouse.url``).
    """

    deps: ServingDeps
    namespace: Namespace
    store_url: str


class MeteringConsumer(Component):
    """A Deployment of the metering consumer with its role, metrics policy and KEDA ScaledObject."""

    MODULE = "metering"

    def __init__(self, name: str, args: MeteringConsumerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        namespace = args.namespace.name
        self.wait_for(*args.namespace.after())
        deps = args.deps
        labels = app_labels(APP, "finops", **{LABEL_REGION: deps.region.name})
        role = irsa_role(
            self.child("role"),
            namespace=namespace,
            service_account=APP,
            oidc_provider_arn=deps.oidc_provider_arn,
            oidc_issuer=deps.oidc_issuer,
            policy=pulumi.Output.from_input(deps.kafka_cluster_arn).apply(
                lambda arn: policy_document(
                    msk_statements(
                        str(arn),
                        [
                            "kafka-cluster:DescribeTopic",
                            "kafka-cluster:ReadData",
                            "kafka-cluster:DescribeGroup",
                            "kafka-cluster:AlterGroup",
                        ],
                        groups=True,
                    )
                )
            ),
            tags=deps.tags,
            opts=self.opts(),
        )
        account = k8s.core.v1.ServiceAccount(
            self.child("sa"),
            metadata={
                "name": APP,
                "namespace": namespace,
                "labels": labels,
                "annotations": {"eks.amazonaws.com/role-arn": role.arn},
            },
            opts=self.opts(),
        )
        # The spec only: the consumer needs no Redis, so it does not get the gateways' -connections Secret (its
        # Redis URL carries the auth token); the Kafka bootstrap, a list of broker names, is a plain value.
        config_data = runtime_config(deps.config)
        config = k8s.core.v1.ConfigMap(
            self.child("config"),
            metadata={"name": f"{APP}-config", "namespace": namespace, "labels": labels},
            data=config_data,
            opts=self.opts(),
        )
        deployment = kube.deployment(
            self.child("deployment"),
            namespace=namespace,
            app=APP,
            labels=labels,
            replicas=1,
            pod=self._pod(args),
            pod_annotations=serving_pod_annotations(config_data, METRICS_PORT),
            opts=self.opts(depends_on=[config, account], ignore_changes=["spec.replicas"]),
        )
        kube.pdb(self.child("pdb"), namespace=namespace, app=APP, opts=self.opts())
        kube.allow_ingress(
            self.child("netpol"),
            namespace=namespace,
            app=APP,
            port=METRICS_PORT,
            sources=[kube.peer(NS_MONITORING)],
            opts=self.opts(),
        )
        usage = next(t for t in deps.config.queues.topics if t.purpose is TopicPurpose.USAGE)
        query = f'sum(tokenplane_finops_consumer_lag{{region="{deps.region.name}"}})'
        kube.scaled_object(
            self.child("scaler"),
            namespace=namespace,
            target=APP,
            min_replicas=1,
            max_replicas=min(usage.partitions, CONSUMER_MAX_REPLICAS),
            cooldown_seconds=300,
            triggers=[{**kube.prometheus_trigger("lag", query, LAG_PER_REPLICA), "metricType": "AverageValue"}],
            opts=self.opts(depends_on=[deployment]),
        )
        self.register_outputs({"deployment": APP})

    @staticmethod
    def _pod(args: MeteringConsumerArgs) -> dict[str, Any]:
        deps = args.deps
        env = env_list(
            {
                Var.CONFIG: f"{CONFIG_DIR}/platform.json",
                Var.REGION: deps.region.name,
                Var.KAFKA_BOOTSTRAP_SERVERS: deps.kafka_bootstrap,
                Var.KAFKA_SASL_MECHANISM: MSK_IAM,
                Var.AWS_REGION: deps.region.cloud_region,
                Var.FINOPS_STORE: args.store_url.replace("http://", "http://finops@", 1),
                # The password as a file of the mounted credentials Secret, not an environment value.
                Var.CLICKHOUSE_PASSWORD_FILE: f"{CREDENTIALS_DIR}/password",
                Var.PROMETHEUS_URL: PROMETHEUS_URL,
            }
        )
        consumer = kube.container(
            APP,
            deps.image,
            command=["python", "-m", "tokenplane.serving.finops"],
            env=env,
            ports=[{"name": "metrics", "containerPort": METRICS_PORT}],
            resources=kube.resources(f"{CONSUMER_CPU:g}", "512Mi", cpu_limit="1", memory_limit="1Gi"),
            readiness=kube.http_probe("/metrics", METRICS_PORT, period_seconds=10),
            # /metrics is served from the consumer's own event loop: a loop wedged by a blocking call stops
            # answering and the pod is restarted; a slow ledger does not block it (lag shows that, and alerts).
            liveness=kube.http_probe("/metrics", METRICS_PORT, period_seconds=20, failure_threshold=6),
            volumeMounts=[
                {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
                {"name": "tmp", "mountPath": "/tmp"},
                CREDENTIALS_MOUNT,
            ],
        )
        # IRSA's token (MSK) is a projected volume of its own; the consumer never calls the Kubernetes API.
        return kube.pod_spec(
            [consumer],
            # fsGroup: the credentials Secret's files are readable by the group only (clickhouse.CREDENTIALS_MODE).
            security=kube.pod_security(group=kube.SERVING_UID, fs_group=kube.SERVING_UID),
            service_account=APP,
            volumes=[
                {"name": "config", "configMap": {"name": f"{APP}-config"}},
                {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
                credentials_volume(),
            ],
            # The batch in hand is stored and committed before exit; anything uncommitted is read again.
            terminationGracePeriodSeconds=60,
        )
