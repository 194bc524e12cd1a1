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

from components import kube
from components.base import Component
from components.batch_files import FILES_PREFIX, WORKER_ACTIONS, files_env, files_statements
from components.gateway import CONFIG_DIR, SPOOL_DIR, SPOOL_LIMIT, runtime_objects, secret_arns
from components.iam import irsa_role, policy_document
from components.naming import LABEL_REGION, NS_BATCH, NS_MONITORING, app_labels, checksum
from components.storage import secure_bucket
from tokenplane.spec import PlatformSpec, Region, TopicPurpose

APP = "batch-workers"
METRICS_PORT = 9000
JOBS_PER_WORKER = 50  # pending jobs one worker drains within its polling window
NONCURRENT_FILE_DAYS = 7  # a deleted or overwritten batch file stays recoverable this long, then is gone

WORKER_CPU = 0.5  # vCPUs each worker requests: it waits on the engines, it does not compute
WORKER_MAX_REPLICAS = 32  # KEDA's ceiling on pending jobs; the system nodes are sized to hold it


@dataclass(frozen=True)
class BatchWorkersArgs:
    spec: PlatformSpec
    region: Region
    image: pulumi.Input[str]
    redis_url: pulumi.Input[str]
    kafka_bootstrap: pulumi.Input[str]
    kafka_cluster_arn: pulumi.Input[str]
    qdrant_url: str
    model_gateway_url: str
    oidc_provider_arn: pulumi.Input[str]
    oidc_issuer: pulumi.Input[str]
    account_id: pulumi.Input[str]
    tags: dict[str, str]
    otel_endpoint: str = ""


class BatchWorkers(Component):
    MODULE = "batch_workers"

    results_bucket: pulumi.Output[str]

    def __init__(self, name: str, args: BatchWorkersArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        labels = app_labels(APP, "batch", **{LABEL_REGION: args.region.name})
        results = secure_bucket(self.child("results"), tags=args.tags, opts=self.opts())
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
                }
            ],
            opts=self.opts(),
        )
        topic = next((t.name for t in args.spec.queues.topics if t.purpose is TopicPurpose.BATCH), "batch-jobs")
        policy = pulumi.Output.all(results.bucket, args.kafka_cluster_arn, args.account_id).apply(
            lambda a: policy_document(self._statements(args, str(a[0]), str(a[1]), str(a[2])))
        )
        role = irsa_role(
            self.child("role"),
            namespace=NS_BATCH,
            service_account=APP,
            oidc_provider_arn=args.oidc_provider_arn,
            oidc_issuer=args.oidc_issuer,
            policy=policy,
            tags=args.tags,
            opts=self.opts(),
        )
        account = k8s.core.v1.ServiceAccount(
            self.child("sa"),
            metadata={
                "name": APP,
                "namespace": NS_BATCH,
                "labels": labels,
                "annotations": {"eks.amazonaws.com/role-arn": role.arn},
            },
            opts=self.opts(),
        )
        config, secret, config_data = runtime_objects(
            self,
            app=APP,
            namespace=NS_BATCH,
            labels=labels,
            spec=args.spec,
            region=args.region,
            redis_url=args.redis_url,
            kafka_bootstrap=args.kafka_bootstrap,
        )
        env: list[dict[str, Any]] = [
            {"name": "TOKENPLANE_CONFIG", "value": f"{CONFIG_DIR}/platform.json"},
            {"name": "TOKENPLANE_REGION", "value": args.region.name},
            {"name": "TOKENPLANE_SPOOL_DIR", "value": SPOOL_DIR},
            {"name": "QDRANT_URL", "value": args.qdrant_url},
            {"name": "KAFKA_TOPIC", "value": topic},
            {"name": "KAFKA_SASL_MECHANISM", "value": "AWS_MSK_IAM"},
            {"name": "MODEL_GATEWAY_URL", "value": args.model_gateway_url},
            *files_env(results.bucket),
            {"name": "AWS_REGION", "value": args.region.cloud_region},
        ]
        if args.otel_endpoint:
            env.append({"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": args.otel_endpoint})
        deployment = k8s.apps.v1.Deployment(
            self.child("deployment"),
            metadata={"name": APP, "namespace": NS_BATCH, "labels": labels},
            spec={
                "replicas": 1,
                "selector": {"matchLabels": {"app.kubernetes.io/name": APP}},
                "template": {
                    "metadata": {
                        "labels": labels,
                        "annotations": {
                            "tokenplane.io/config-checksum": checksum(config_data),
                            "prometheus.io/scrape": "true",
                            "prometheus.io/port": str(METRICS_PORT),
                        },
                    },
                    "spec": {
                        "serviceAccountName": APP,
                        # A worker finishes the job in hand before it exits; Kafka redelivers anything uncommitted.
                        "terminationGracePeriodSeconds": 300,
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": 10001,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "containers": [
                            {
                                "name": APP,
                                "image": args.image,
                                "command": ["python", "-m", "serving.batch"],
                                "env": env,
                                "envFrom": [{"secretRef": {"name": f"{APP}-connections"}}],
                                "ports": [{"name": "metrics", "containerPort": METRICS_PORT}],
                                "resources": {
                                    "requests": {"cpu": f"{WORKER_CPU:g}", "memory": "512Mi"},
                                    "limits": {"cpu": "1", "memory": "1Gi"},
                                },
                                "securityContext": {
                                    "allowPrivilegeEscalation": False,
                                    "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]},
                                },
                                "volumeMounts": [
                                    {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
                                    {"name": "spool", "mountPath": SPOOL_DIR},
                                    {"name": "tmp", "mountPath": "/tmp"},
                                ],
                            }
                        ],
                        # The root filesystem is read-only: usage events wait in the spool while Kafka is away.
                        "volumes": [
                            {"name": "config", "configMap": {"name": f"{APP}-config"}},
                            {"name": "spool", "emptyDir": {"sizeLimit": SPOOL_LIMIT}},
                            {"name": "tmp", "emptyDir": {"sizeLimit": "256Mi"}},
                        ],
                    },
                },
            },
            opts=self.opts(depends_on=[config, account, secret], ignore_changes=["spec.replicas"]),
        )
        kube.pdb(self.child("pdb"), namespace=NS_BATCH, app=APP, opts=self.opts())
        kube.allow_ingress(
            self.child("netpol"),
            namespace=NS_BATCH,
            app=APP,
            port=METRICS_PORT,
            sources=[kube.peer(NS_MONITORING)],
            opts=self.opts(),
        )
        query = f'sum(tokenplane_batch_pending_jobs{{region="{args.region.name}"}})'
        kube.scaled_object(
            self.child("scaler"),
            namespace=NS_BATCH,
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
            {
                "Effect": "Allow",
                "Action": ["kafka-cluster:Connect", "kafka-cluster:DescribeCluster"],
                "Resource": [kafka_arn],
            },
            {
                "Effect": "Allow",
                "Action": [
                    "kafka-cluster:DescribeTopic",
                    "kafka-cluster:ReadData",
                    "kafka-cluster:DescribeGroup",
                    "kafka-cluster:AlterGroup",
                ],
                "Resource": [topics, kafka_arn.replace(":cluster/", ":group/", 1) + "/*"],
            },
            # Each line is metered like online traffic: the worker's pipeline writes usage and audit events.
            {"Effect": "Allow", "Action": ["kafka-cluster:WriteData"], "Resource": [topics]},
        ]
        # The pipeline authenticates nothing, but it builds the gateway's key ring, which reads every key.
        arns = secret_arns(args.spec, args.region, account_id)
        if arns:
            statements.append({"Effect": "Allow", "Action": ["secretsmanager:GetSecretValue"], "Resource": arns})
        return statements
