"""BatchWorkers: consume class-D jobs from Kafka, run them through the model gateway, store results in S3."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components import kube
from components.base import Component
from components.iam import irsa_role, policy_document
from components.naming import LABEL_REGION, NS_BATCH, NS_MONITORING, app_labels
from components.storage import secure_bucket
from tokenplane.spec import PlatformSpec, Region, TopicPurpose

APP = "batch-workers"
METRICS_PORT = 9000
JOBS_PER_WORKER = 50  # pending jobs one worker drains within its polling window


@dataclass(frozen=True)
class BatchWorkersArgs:
    spec: PlatformSpec
    region: Region
    image: pulumi.Input[str]
    kafka_bootstrap: pulumi.Input[str]
    kafka_cluster_arn: pulumi.Input[str]
    model_gateway_url: str
    oidc_provider_arn: pulumi.Input[str]
    oidc_issuer: pulumi.Input[str]
    tags: dict[str, str]


class BatchWorkers(Component):
    MODULE = "batch_workers"

    results_bucket: pulumi.Output[str]

    def __init__(self, name: str, args: BatchWorkersArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        labels = app_labels(APP, "batch", **{LABEL_REGION: args.region.name})
        results = secure_bucket(self.child("results"), tags=args.tags, opts=self.opts())
        topic = next((t.name for t in args.spec.queues.topics if t.purpose is TopicPurpose.BATCH), "batch-jobs")
        policy = pulumi.Output.all(results.arn, args.kafka_cluster_arn).apply(
            lambda a: policy_document(
                [
                    {"Effect": "Allow", "Action": ["s3:PutObject", "s3:GetObject"], "Resource": [f"{a[0]}/*"]},
                    {
                        "Effect": "Allow",
                        "Action": ["kafka-cluster:Connect", "kafka-cluster:DescribeCluster"],
                        "Resource": [a[1]],
                    },
                    {
                        "Effect": "Allow",
                        "Action": [
                            "kafka-cluster:DescribeTopic",
                            "kafka-cluster:ReadData",
                            "kafka-cluster:DescribeGroup",
                            "kafka-cluster:AlterGroup",
                        ],
                        "Resource": [
                            str(a[1]).replace(":cluster/", ":topic/", 1) + "/*",
                            str(a[1]).replace(":cluster/", ":group/", 1) + "/*",
                        ],
                    },
                ]
            )
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
        secret = k8s.core.v1.Secret(
            self.child("secret"),
            metadata={"name": f"{APP}-connections", "namespace": NS_BATCH, "labels": labels},
            string_data={"KAFKA_BOOTSTRAP_SERVERS": args.kafka_bootstrap},
            opts=self.opts(),
        )
        deployment = k8s.apps.v1.Deployment(
            self.child("deployment"),
            metadata={"name": APP, "namespace": NS_BATCH, "labels": labels},
            spec={
                "replicas": 1,
                "selector": {"matchLabels": {"app.kubernetes.io/name": APP}},
                "template": {
                    "metadata": {
                        "labels": labels,
                        "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": str(METRICS_PORT)},
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
                                "env": [
                                    {"name": "KAFKA_TOPIC", "value": topic},
                                    {"name": "KAFKA_SASL_MECHANISM", "value": "AWS_MSK_IAM"},
                                    {"name": "MODEL_GATEWAY_URL", "value": args.model_gateway_url},
                                    {"name": "RESULTS_BUCKET", "value": results.bucket},
                                    {"name": "AWS_REGION", "value": args.region.cloud_region},
                                ],
                                "envFrom": [{"secretRef": {"name": f"{APP}-connections"}}],
                                "ports": [{"name": "metrics", "containerPort": METRICS_PORT}],
                                "resources": {
                                    "requests": {"cpu": "500m", "memory": "512Mi"},
                                    "limits": {"cpu": "1", "memory": "1Gi"},
                                },
                                "securityContext": {
                                    "allowPrivilegeEscalation": False,
                                    "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]},
                                },
                            }
                        ],
                    },
                },
            },
            opts=self.opts(depends_on=[account, secret], ignore_changes=["spec.replicas"]),
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
            max_replicas=32,
            cooldown_seconds=300,
            triggers=[
                {**kube.prometheus_trigger("pending-jobs", query, JOBS_PER_WORKER), "metricType": "AverageValue"}
            ],
            opts=self.opts(depends_on=[deployment]),
        )
        self.results_bucket = results.bucket
        self.register_outputs({"results_bucket": results.bucket})
