"""BatchWorkers: consume class-D jobs from Kafka, run them through the model gateway, store results in S3.

A worker runs each line through the AI gateway's own pipeline (``serving.batch``
builds it with ``serving.gateway.runtime.gateway_from_env``), so its pods get
what the gateway's get: the spec as a ConfigMap, Redis and Kafka in a Secret, a
spool volume for usage events, Qdrant, and the tenants' key secrets. The
results bucket is also where the AI gateway stores the Batch API's files
(``components/batch_files.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from tokenplane.components import kube
from tokenplane.components.arguments import check_base_url
from tokenplane.components.base import Component
from tokenplane.components.batch_files import WORKER_ACTIONS, files_env, files_statements
from tokenplane.components.gateway import (
    CONFIG_DIR,
    SPOOL_DIR,
    ServingDeps,
    runtime_objects,
    secret_statements,
    serving_pod_annotations,
    serving_volumes,
)
from tokenplane.components.iam import irsa_role, msk_statements, policy_document
from tokenplane.components.kube import Namespace
from tokenplane.components.naming import LABEL_REGION, NS_MONITORING, app_labels
from tokenplane.components.storage import secure_bucket
from tokenplane.runtime_env import DEFAULT_FILES_PREFIX as FILES_PREFIX
from tokenplane.runtime_env import DEFAULT_METRICS_PORT as METRICS_PORT
from tokenplane.runtime_env import MSK_IAM, Var, env_list
from tokenplane.spec import TopicPurpose

APP = "batch-workers"
JOBS_PER_WORKER = 50  # pending jobs one worker drains within its polling window
NONCURRENT_FILE_DAYS = 7  # a deleted or overwritten batch file stays recoverable this long, then is gone

WORKER_CPU = 0.5  # vCPUs each worker requests: it waits on the engines, it does not compute
WORKER_MAX_REPLICAS = 32  # KEDA's ceiling on pending jobs; the system nodes are sized to hold it


@dataclass(frozen=True, kw_only=True)
class BatchWorkersArgs:
    """The Batch API's workers in one region.

    Args:
        deps: the gateways' cluster, data stores and identity: a worker runs the AI gateway's pipeline.
        namespace: where its objects go (``Namespace.create`` or ``Namespace.existing``).
        model_gateway_url: the model gateway's base URL (``ModelGateway.url``), which the workers call: scheme,
            host and port, without /v1 (the client appends the OpenAI path); one with a path raises ``ValueError``.
    """

    deps: ServingDeps
    namespace: Namespace
    model_gateway_url: str

    def __post_init__(self) -> None:
        check_base_url("BatchWorkersArgs", "model_gateway_url", self.model_gateway_url)


class BatchWorkers(Component):
    """Class-D workers for the Batch API: they run queued jobs through the AI gateway's pipeline and keep results."""

    MODULE = "batch_workers"

    results_bucket: pulumi.Output[str]

    def __init__(self, name: str, args: BatchWorkersArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        namespace = args.namespace.name
        self.wait_for(*args.namespace.after())
        labels = app_labels(APP, "batch", **{LABEL_REGION: args.deps.region.name})
        # Its lifecycle configuration below holds the abort rule with its own (S3 keeps one per bucket).
        results = secure_bucket(
            self.child("results"), tags=args.deps.tags, opts=self.opts(), abort_incomplete_uploads=False
        )
        # Batch files are tenants' data: one a tenant deleted must not live on as an old version of a
        # versioned bucket, nor an upload cut short linger as invisible parts.
        aws.s3.BucketLifecycleConfiguration(
            self.child("results-lifecycle"),
            bucket=results.id,
            rules=[
                {
                    "id": "batch-files",
                    "status": "Enabled",
                    "filter": {"prefix": f"{FILES_PREFIX}/"},
                    "noncurrent_version_expiration": {"noncurrent_days": NONCURRENT_FILE_DAYS},
                    "abort_incomplete_multipart_upload": {"days_after_initiation": 1},
                },
                # An upload that fails anywhere in the bucket (results too, not only files/) leaves parts that
                # are billed until aborted.
                {
                    "id": "abort-incomplete-uploads",
                    "status": "Enabled",
                    "filter": {},
                    "abort_incomplete_multipart_upload": {"days_after_initiation": 1},
                },
            ],
            opts=self.opts(),
        )
        topic = args.deps.config.queues.topic_names()[TopicPurpose.BATCH]
        policy = pulumi.Output.all(results.bucket, args.deps.kafka_cluster_arn, args.deps.account_id).apply(
            lambda a: policy_document(self._statements(args, str(a[0]), str(a[1]), str(a[2])))
        )
        role = irsa_role(
            self.child("role"),
            namespace=namespace,
            service_account=APP,
            oidc_provider_arn=args.deps.oidc_provider_arn,
            oidc_issuer=args.deps.oidc_issuer,
            policy=policy,
            tags=args.deps.tags,
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
        config, secret, config_data = runtime_objects(
            self,
            app=APP,
            namespace=namespace,
            labels=labels,
            config=args.deps.config,
            redis_url=args.deps.redis_url,
            kafka_bootstrap=args.deps.kafka_bootstrap,
        )
        env = [
            *env_list(
                {
                    Var.CONFIG: f"{CONFIG_DIR}/platform.json",
                    Var.REGION: args.deps.region.name,
                    Var.SPOOL_DIR: SPOOL_DIR,
                    Var.QDRANT_URL: args.deps.qdrant_url,
                    Var.KAFKA_TOPIC: topic,
                    Var.KAFKA_SASL_MECHANISM: MSK_IAM,
                    Var.MODEL_GATEWAY_URL: args.model_gateway_url,
                }
            ),
            *files_env(results.bucket),
            *env_list(
                {Var.AWS_REGION: args.deps.region.cloud_region, Var.OTEL_ENDPOINT: args.deps.otel_endpoint or None}
            ),
        ]
        # IRSA's token is a projected volume of its own; the worker never calls the Kubernetes API.
        pod = kube.pod_spec(
            [
                kube.container(
                    APP,
                    args.deps.image,
                    command=["python", "-m", "tokenplane.serving.batch"],
                    env=env,
                    envFrom=[{"secretRef": {"name": f"{APP}-connections"}}],
                    ports=[{"name": "metrics", "containerPort": METRICS_PORT}],
                    # The worker serves no HTTP but /metrics, which it starts only once its gateway
                    # (Redis, the spec, the pools) is built: ready then. It answers from its own
                    # thread, so liveness catches a wedged or dead process, not a slow job.
                    readiness=kube.http_probe("/metrics", "metrics", period_seconds=10),
                    liveness=kube.http_probe("/metrics", "metrics", period_seconds=20, failure_threshold=6),
                    resources=kube.resources(f"{WORKER_CPU:g}", "512Mi", cpu_limit="1", memory_limit="1Gi"),
                    volumeMounts=[
                        {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
                        {"name": "spool", "mountPath": SPOOL_DIR},
                        {"name": "tmp", "mountPath": "/tmp"},
                    ],
                )
            ],
            security=kube.pod_security(),
            service_account=APP,
            volumes=serving_volumes(APP),
            # A worker finishes the job in hand before it exits; Kafka redelivers anything uncommitted.
            terminationGracePeriodSeconds=300,
        )
        deployment = kube.deployment(
            self.child("deployment"),
            namespace=namespace,
            app=APP,
            labels=labels,
            replicas=1,
            pod=pod,
            pod_annotations=serving_pod_annotations(config_data, METRICS_PORT, {"connections": secret}),
            opts=self.opts(depends_on=[config, account, secret], ignore_changes=["spec.replicas"]),
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
        query = f'sum(tokenplane_batch_pending_jobs{{region="{args.deps.region.name}"}})'
        kube.scaled_object(
            self.child("scaler"),
            namespace=namespace,
            target=APP,
            min_replicas=1,
            max_replicas=WORKER_MAX_REPLICAS,
            cooldown_seconds=300,
            triggers=[
                {**kube.prometheus_trigger("pending-jobs", query, JOBS_PER_WORKER), "metricType": "AverageValue"}
            ],
            opts=self.opts(depends_on=[deployment]),
        )
        self.results_bucket = results.bucket
        self.register_outputs({"results_bucket": results.bucket})

    @staticmethod
    def _statements(args: BatchWorkersArgs, bucket: str, kafka_arn: str, account_id: str) -> list[dict[str, Any]]:
        """The files in the results bucket; the batch topic and group; the usage and audit topics; tenant keys."""
        topics = kafka_arn.replace(":cluster/", ":topic/", 1) + "/*"
        statements: list[dict[str, Any]] = [
            *files_statements(bucket, WORKER_ACTIONS),
            *msk_statements(
                kafka_arn,
                [
                    "kafka-cluster:DescribeTopic",
                    "kafka-cluster:ReadData",
                    "kafka-cluster:DescribeGroup",
                    "kafka-cluster:AlterGroup",
                ],
                groups=True,
            ),
            # Each line is metered like online traffic: the worker's pipeline writes usage and audit events.
            {"Effect": "Allow", "Action": ["kafka-cluster:WriteData"], "Resource": [topics]},
            # The pipeline authenticates nothing, but it builds the gateway's key ring, which reads every key.
            *secret_statements(args.deps.config, account_id),
        ]
        return statements
