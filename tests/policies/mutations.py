"""The mutation suite's cases: per policy, a minimal Pulumi program in a good and a bad variant.

Each ``Mutation.build(bad)`` returns a rendered graph: most are small programs
of plain ``pulumi_aws`` / ``pulumi_kubernetes`` resources, run under the same
offline render as ``tokenplane check --program`` (so inputs arrive camelCase,
numbers as floats, and Kubernetes objects are schema-checked). The bad variant
differs from the good one in the one thing its policy guards. The policies
that read the platform spec are mutated in a rendered example stack instead
(``LlmPlatform`` is the program there), and two are mutated through their
config threshold, which the ``mutation`` text says.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pulumi_aws as aws
import pulumi_kubernetes as k8s

from tests.policies.fixtures import dropping, editing, k8s_name, kind_of, rendered, spec
from tokenplane.proof.render import RenderedResource, RenderResult, render_program

REGION = "eu-west-1"
DIGEST = "sha256:" + "a" * 64
ECR_IMAGE = f"123456789012.dkr.ecr.{REGION}.amazonaws.com/app@{DIGEST}"
GATEWAY_CONFIG_MAPS = ("ai-gateway-config", "model-gateway-config")


@dataclass(frozen=True)
class Mutation:
    policy: str
    mutation: str  # what the bad variant changes, for the report
    build: Callable[[bool], RenderResult]
    config: dict[str, Any] = field(default_factory=dict)  # policy config for the bad run only


def program(fn: Callable[[bool], None]) -> Callable[[bool], RenderResult]:
    """A program ``fn(bad)`` as a graph builder."""

    def build(bad: bool) -> RenderResult:
        def run() -> dict[str, Any]:
            fn(bad)
            return {}

        return render_program(run, regions={REGION: REGION}, stack="mutation", project="mutations")

    return build


# --- building blocks ----------------------------------------------------------------------------


def container(**changes: Any) -> dict[str, Any]:
    """A container that passes every container rule; ``changes`` replace top-level fields."""
    base: dict[str, Any] = {
        "name": "app",
        "image": ECR_IMAGE,
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "256Mi"}},
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 10001,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    return {**base, **changes}


def secure(ctx_changes: dict[str, Any]) -> dict[str, Any]:
    """A container whose securityContext differs from the hardened one by ``ctx_changes`` (None deletes)."""
    c = container()
    ctx = {**c["securityContext"], **ctx_changes}
    c["securityContext"] = {k: v for k, v in ctx.items() if v is not None}
    return c


def pod(containers: list[dict[str, Any]], **changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": containers,
    }
    return {**base, **changes}


def workload(kind: str, name: str, pod_spec: dict[str, Any], labels: dict[str, str] | None = None) -> None:
    """One object of ``kind`` in the default namespace, running ``pod_spec``."""
    labels = {"app.kubernetes.io/name": name, **(labels or {})}
    metadata = {"name": name, "namespace": "default", "labels": labels}
    template = {"metadata": {"labels": labels}, "spec": pod_spec}
    selector = {"matchLabels": {"app.kubernetes.io/name": name}}
    if kind == "Pod":
        k8s.core.v1.Pod(name, metadata=metadata, spec=pod_spec)
    elif kind == "Deployment":
        k8s.apps.v1.Deployment(name, metadata=metadata, spec={"selector": selector, "template": template})
    elif kind == "StatefulSet":
        spec_ = {"selector": selector, "serviceName": name, "template": template}
        k8s.apps.v1.StatefulSet(name, metadata=metadata, spec=spec_)
    elif kind == "DaemonSet":
        k8s.apps.v1.DaemonSet(name, metadata=metadata, spec={"selector": selector, "template": template})
    elif kind == "ReplicaSet":
        k8s.apps.v1.ReplicaSet(name, metadata=metadata, spec={"selector": selector, "template": template})
    elif kind == "Job":
        job_template = {**template, "spec": {**pod_spec, "restartPolicy": "Never"}}
        k8s.batch.v1.Job(name, metadata=metadata, spec={"template": job_template})
    elif kind == "CronJob":
        job_template = {**template, "spec": {**pod_spec, "restartPolicy": "OnFailure"}}
        k8s.batch.v1.CronJob(
            name, metadata=metadata, spec={"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": job_template}}}
        )
    else:
        raise ValueError(f"no builder for {kind}")


def subnets(azs: list[str], **extra: Any) -> list[aws.ec2.Subnet]:
    return [
        aws.ec2.Subnet(f"subnet-{i}", vpc_id="vpc-1", cidr_block=f"10.0.{i}.0/24", availability_zone=az, **extra)
        for i, az in enumerate(azs)
    ]


def node_group(azs: list[str], *, gpu: bool = False, tainted: bool = True, environment: str = "dev") -> None:
    taints = [aws.eks.NodeGroupTaintArgs(key="nvidia.com/gpu", value="true", effect="NO_SCHEDULE")] if tainted else []
    aws.eks.NodeGroup(
        "workers",
        cluster_name="main",
        node_role_arn="arn:aws:iam::123456789012:role/nodes",
        subnet_ids=[s.id for s in subnets(azs)],
        ami_type="AL2023_x86_64_NVIDIA" if gpu else "AL2023_x86_64_STANDARD",
        taints=taints if gpu else None,
        tags={"tokenplane:environment": environment},
        scaling_config=aws.eks.NodeGroupScalingConfigArgs(min_size=1, max_size=3, desired_size=1),
    )


def iam_document(action: str, resource: str) -> str:
    return json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": action, "Resource": resource}]}
    )


def eks_cluster(*, public: bool = False, encrypted: bool = True) -> None:
    aws.eks.Cluster(
        "main",
        role_arn="arn:aws:iam::123456789012:role/cluster",
        vpc_config=aws.eks.ClusterVpcConfigArgs(
            subnet_ids=["subnet-a", "subnet-b"], endpoint_public_access=public, endpoint_private_access=True
        ),
        encryption_config=aws.eks.ClusterEncryptionConfigArgs(
            resources=["secrets"],
            provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn="arn:aws:kms:eu-west-1:123456789012:key/k"),
        )
        if encrypted
        else None,
    )


def rds(*, public: bool = False, encrypted: bool = True) -> None:
    aws.rds.Instance(
        "db",
        engine="postgres",
        instance_class="db.t3.micro",
        allocated_storage=20,
        username="app",
        manage_master_user_password=True,
        publicly_accessible=public,
        storage_encrypted=encrypted,
    )


# --- spec-driven stack policies: mutations of the rendered example stacks ------------------------


def with_spec(graph: RenderResult, change: Callable[[dict[str, Any]], None]) -> RenderResult:
    """The graph with ``change`` applied to the spec JSON the gateways' ConfigMaps carry."""

    def rewrite(inputs: dict[str, Any]) -> None:
        data = json.loads(inputs["data"]["platform.json"])
        change(data)
        inputs["data"]["platform.json"] = json.dumps(data)

    return editing(graph, lambda r: kind_of(r) == "ConfigMap" and k8s_name(r) in GATEWAY_CONFIG_MAPS, rewrite)


def _times(path: tuple[str, str], factor: float) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data[path[0]][path[1]] *= factor

    return change


def _eu_record(r: RenderedResource) -> bool:
    return r.type == "aws:route53/record:Record" and r.inputs.get("name") == f"eu.{spec('byteion').platform.domain}"


def _to_us(inputs: dict[str, Any]) -> None:
    inputs["records"] = [f"us-east.regions.{spec('byteion').platform.domain}"]


def stack_mutation(name: str, bad: Callable[[RenderResult], RenderResult]) -> Callable[[bool], RenderResult]:
    return lambda is_bad: bad(rendered(name)) if is_bad else rendered(name)


# --- the cases ----------------------------------------------------------------------------------


def _cases() -> list[Mutation]:
    m = Mutation
    return [
        m(
            "gpu-node-groups-tainted",
            "GPU node group without the nvidia.com/gpu taint",
            program(lambda bad: node_group(["eu-west-1a", "eu-west-1b"], gpu=True, tainted=not bad)),
        ),
        m(
            "elasticache-encrypted-with-auth",
            "at_rest_encryption_enabled=False",
            program(
                lambda bad: aws.elasticache.ReplicationGroup(
                    "redis",
                    description="cache",
                    node_type="cache.t4g.small",
                    at_rest_encryption_enabled=not bad,
                    transit_encryption_enabled=True,
                    auth_token="0123456789abcdef0123",
                )
            ),
        ),
        m(
            "msk-tls-iam-encrypted",
            "client_broker=PLAINTEXT",
            program(
                lambda bad: aws.msk.Cluster(
                    "kafka",
                    kafka_version="3.8.x",
                    number_of_broker_nodes=2,
                    broker_node_group_info=aws.msk.ClusterBrokerNodeGroupInfoArgs(
                        instance_type="kafka.m7g.large",
                        client_subnets=["subnet-a", "subnet-b"],
                        security_groups=["sg-1"],
                    ),
                    encryption_info=aws.msk.ClusterEncryptionInfoArgs(
                        encryption_at_rest_kms_key_arn="arn:aws:kms:eu-west-1:123456789012:key/k",
                        encryption_in_transit=aws.msk.ClusterEncryptionInfoEncryptionInTransitArgs(
                            client_broker="PLAINTEXT" if bad else "TLS", in_cluster=True
                        ),
                    ),
                    client_authentication=aws.msk.ClusterClientAuthenticationArgs(
                        sasl=aws.msk.ClusterClientAuthenticationSaslArgs(iam=True)
                    ),
                )
            ),
        ),
        m(
            "security-groups-no-public-ingress",
            "ingress on every port from 0.0.0.0/0",
            program(
                lambda bad: aws.ec2.SecurityGroup(
                    "web",
                    vpc_id="vpc-1",
                    ingress=[
                        aws.ec2.SecurityGroupIngressArgs(
                            protocol="-1" if bad else "tcp",
                            from_port=0 if bad else 443,
                            to_port=0 if bad else 443,
                            cidr_blocks=["0.0.0.0/0"],
                        )
                    ],
                )
            ),
        ),
        m("rds-not-publicly-accessible", "publicly_accessible=True", program(lambda bad: rds(public=bad))),
        m(
            "eks-endpoint-not-public",
            "endpoint_public_access=True, no CIDRs",
            program(lambda bad: eks_cluster(public=bad)),
        ),
        m(
            "ebs-encrypted",
            "encrypted=False",
            program(lambda bad: aws.ebs.Volume("data", availability_zone="eu-west-1a", size=10, encrypted=not bad)),
        ),
        m("rds-storage-encrypted", "storage_encrypted=False", program(lambda bad: rds(encrypted=not bad))),
        m("eks-secrets-encrypted", "no encryption_config", program(lambda bad: eks_cluster(encrypted=not bad))),
        m(
            "kms-key-rotation-enabled",
            "enable_key_rotation=False",
            program(lambda bad: aws.kms.Key("key", description="data", enable_key_rotation=not bad)),
        ),
        m(
            "iam-no-wildcards",
            "Action s3:* on Resource *",
            program(
                lambda bad: aws.iam.Policy(
                    "app",
                    policy=iam_document("s3:*", "*") if bad else iam_document("s3:GetObject", "arn:aws:s3:::b/*"),
                )
            ),
        ),
        m(
            "iam-no-access-keys",
            "an AccessKey for the user",
            program(_user_with_key),
        ),
        m(
            "node-groups-multi-az",
            "both subnets in eu-west-1a",
            program(lambda bad: node_group(["eu-west-1a", "eu-west-1a" if bad else "eu-west-1b"])),
        ),
        m(
            "prod-node-groups-three-azs",
            "prod node group in two AZs, not three",
            program(
                lambda bad: node_group(
                    ["eu-west-1a", "eu-west-1b", *([] if bad else ["eu-west-1c"])], environment="prod"
                )
            ),
        ),
        m(
            "data-stores-in-private-subnets",
            "ElastiCache subnet group on a subnet with map_public_ip_on_launch",
            program(
                lambda bad: aws.elasticache.SubnetGroup(
                    "cache", subnet_ids=[s.id for s in subnets(["eu-west-1a"], map_public_ip_on_launch=bad)]
                )
            ),
        ),
        m(
            "containers-have-requests-and-limits",
            "container without resources",
            program(lambda bad: workload("Deployment", "app", pod([container(resources={}) if bad else container()]))),
        ),
        m(
            "vllm-gpus-match-parallelism",
            "TP=2 with nvidia.com/gpu=1",
            program(lambda bad: workload("Deployment", "vllm-x", pod([_vllm(gpus=1 if bad else 2)]))),
        ),
        m(
            "images-not-latest",
            "image nginx:latest",
            program(lambda bad: workload("Pod", "web", pod([container(image="nginx:latest" if bad else ECR_IMAGE)]))),
        ),
        m(
            "images-pinned-by-digest",
            "image pinned by tag, not digest",
            program(
                lambda bad: workload(
                    "Pod",
                    "web",
                    pod([container(image=ECR_IMAGE.split("@", maxsplit=1)[0] + ":1.0" if bad else ECR_IMAGE)]),
                )
            ),
        ),
        m(
            "images-from-allowed-registries",
            "image from docker.io/library",
            program(
                lambda bad: workload("Pod", "web", pod([container(image=f"nginx@{DIGEST}" if bad else ECR_IMAGE)]))
            ),
        ),
        m(
            "gateways-non-root-read-only",
            "gateway container without readOnlyRootFilesystem",
            program(
                lambda bad: workload(
                    "Deployment",
                    "gw",
                    pod([secure({"readOnlyRootFilesystem": None} if bad else {})]),
                    labels={"app.kubernetes.io/component": "gateway"},
                )
            ),
        ),
        m(
            "only-ai-gateway-load-balancer",
            "a LoadBalancer Service for something else",
            program(
                lambda bad: k8s.core.v1.Service(
                    "svc",
                    metadata={"name": "admin" if bad else "ai-gateway", "namespace": "default"},
                    spec={"type": "LoadBalancer", "ports": [{"port": 443}], "selector": {"app": "x"}},
                )
            ),
        ),
        m(
            "no-secrets-in-configmaps",
            "an OpenAI key in a ConfigMap",
            program(
                lambda bad: k8s.core.v1.ConfigMap(
                    "cfg",
                    metadata={"name": "cfg", "namespace": "default"},
                    data={"openai": "sk-proj-abcdefghijklmnopqrstuvwxyz0123" if bad else "aws-sm://prod/openai"},
                )
            ),
        ),
        m(
            "autoscaling-composite-signals",
            "vLLM ScaledObject on GPU utilization only",
            program(_scaled_object),
        ),
        m(
            "pods-not-privileged",
            "Pod container privileged: true",
            program(lambda bad: workload("Pod", "p", pod([secure({"privileged": True} if bad else {})]))),
        ),
        m(
            "pods-no-host-namespaces",
            "DaemonSet with hostNetwork: true",
            program(
                lambda bad: workload("DaemonSet", "d", pod([container()], **({"hostNetwork": True} if bad else {})))
            ),
        ),
        m(
            "pods-restricted-volumes",
            "StatefulSet mounting hostPath /var/run",
            program(lambda bad: workload("StatefulSet", "s", pod([container()], volumes=[_volume(bad)]))),
        ),
        m(
            "pods-run-as-non-root",
            "CronJob container runAsUser: 0",
            program(
                lambda bad: workload(
                    "CronJob", "c", pod([secure({"runAsUser": 0, "runAsNonRoot": None} if bad else {})])
                )
            ),
        ),
        m(
            "pods-drop-all-capabilities",
            "ReplicaSet container adding NET_ADMIN",
            program(
                lambda bad: workload(
                    "ReplicaSet",
                    "r",
                    pod([secure({"capabilities": {"drop": ["ALL"], "add": ["NET_ADMIN"]}} if bad else {})]),
                )
            ),
        ),
        m(
            "pods-no-privilege-escalation",
            "Job container without allowPrivilegeEscalation: false",
            program(lambda bad: workload("Job", "j", pod([secure({"allowPrivilegeEscalation": None} if bad else {})]))),
        ),
        m(
            "pods-seccomp-runtime-default",
            "Deployment container with seccompProfile Unconfined",
            program(
                lambda bad: workload(
                    "Deployment",
                    "s",
                    pod([secure({"seccompProfile": {"type": "Unconfined"}} if bad else {})]),
                )
            ),
        ),
        m(
            "pods-baseline-security-options",
            "StatefulSet container with seLinuxOptions.type spc_t (SELinux off for it)",
            program(
                lambda bad: workload(
                    "StatefulSet", "b", pod([secure({"seLinuxOptions": {"type": "spc_t"}} if bad else {})])
                )
            ),
        ),
        m(
            "pods-read-only-root-filesystem",
            "CronJob container with a writable root filesystem",
            program(
                lambda bad: workload("CronJob", "w", pod([secure({"readOnlyRootFilesystem": False} if bad else {})]))
            ),
        ),
        m("s3-buckets-private-versioned-encrypted", "bucket without its versioning", program(_bucket)),
        m("s3-buckets-tls-only", "bucket without a TLS-only bucket policy", program(_tls_bucket)),
        m(
            "registry-replicated-to-dr",
            "byteion without the registry's replication config",
            stack_mutation(
                "byteion",
                lambda g: dropping(g, lambda r: r.type == "aws:s3/bucketReplicationConfig:BucketReplicationConfig"),
            ),
        ),
        m(
            "namespaces-have-network-policy",
            "a Namespace without a NetworkPolicy",
            program(_namespace),
        ),
        m(
            "replicated-workloads-have-pdb",
            "3-replica Deployment without a PodDisruptionBudget",
            program(_replicated),
        ),
        m(
            "residency-pinned",
            "byteion's eu.<domain> record pointed at us-east",
            stack_mutation("byteion", lambda g: editing(g, _eu_record, _to_us, expect=1)),
        ),
        m(
            "dr-critical-pools-in-secondary",
            "byteion without vllm-small-chat in its DR region us-west",
            stack_mutation(
                "byteion",
                lambda g: dropping(
                    g,
                    lambda r: kind_of(r) == "Deployment" and r.region == "us-west" and k8s_name(r) == "vllm-small-chat",
                ),
            ),
        ),
        m(
            "capacity-lambda-below-mu",
            "dev at 50x its peak RPS",
            stack_mutation("dev", lambda g: with_spec(g, _times(("platform", "peak_rps"), 50))),
        ),
        m(
            "capacity-kv-headroom",
            "dev checked with policy config maxKvUsage 0.01 (no spec edit fills KV without overloading first)",
            stack_mutation("dev", lambda g: g),
            config={"maxKvUsage": 0.01},
        ),
        m(
            "budget-under-cap",
            "dev with budget.max_usd_per_hour 10",
            stack_mutation("dev", lambda g: with_spec(g, _budget_10)),
        ),
    ]


def _budget_10(data: dict[str, Any]) -> None:
    data["budget"]["max_usd_per_hour"] = 10


def _user_with_key(bad: bool) -> None:
    user = aws.iam.User("ci")
    if bad:
        aws.iam.AccessKey("ci-key", user=user.name)


def _vllm(gpus: int) -> dict[str, Any]:
    c = container(
        name="vllm",
        image=f"vllm/vllm-openai@{DIGEST}",
        args=["--tensor-parallel-size", "2"],
    )
    resources = copy.deepcopy(c["resources"])
    for section in ("requests", "limits"):
        resources[section]["nvidia.com/gpu"] = str(gpus)
    return {**c, "resources": resources}


def _scaled_object(bad: bool) -> None:
    query = "avg(DCGM_FI_DEV_GPU_UTIL)" if bad else "avg(vllm:request_queue_time_seconds_sum)"
    k8s.apiextensions.CustomResource(
        "scaler",
        api_version="keda.sh/v1alpha1",
        kind="ScaledObject",
        metadata={"name": "vllm-x", "namespace": "default"},
        spec={
            "scaleTargetRef": {"name": "vllm-x"},
            "triggers": [
                {
                    "type": "prometheus",
                    "metadata": {"serverAddress": "http://prom:9090", "query": query, "threshold": "1"},
                }
            ],
        },
    )


def _volume(bad: bool) -> dict[str, Any]:
    return {"name": "v", "hostPath": {"path": "/var/run"}} if bad else {"name": "v", "emptyDir": {}}


def _bucket(bad: bool) -> None:
    bucket = aws.s3.Bucket("data")
    aws.s3.BucketPublicAccessBlock(
        "data-pab",
        bucket=bucket.id,
        block_public_acls=True,
        block_public_policy=True,
        ignore_public_acls=True,
        restrict_public_buckets=True,
    )
    aws.s3.BucketServerSideEncryptionConfiguration(
        "data-sse",
        bucket=bucket.id,
        rules=[
            aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                    sse_algorithm="aws:kms"
                )
            )
        ],
    )
    if not bad:
        aws.s3.BucketVersioning(
            "data-versioning",
            bucket=bucket.id,
            versioning_configuration=aws.s3.BucketVersioningVersioningConfigurationArgs(status="Enabled"),
        )


def _tls_bucket(bad: bool) -> None:
    bucket = aws.s3.Bucket("data")
    if not bad:
        deny = {
            "Effect": "Deny",
            "Principal": "*",
            "Action": "s3:*",
            "Resource": ["arn:aws:s3:::data", "arn:aws:s3:::data/*"],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        }
        aws.s3.BucketPolicy(
            "data-tls", bucket=bucket.id, policy=json.dumps({"Version": "2012-10-17", "Statement": [deny]})
        )


def _namespace(bad: bool) -> None:
    k8s.core.v1.Namespace("ns", metadata={"name": "team"})
    if not bad:
        k8s.networking.v1.NetworkPolicy(
            "deny",
            metadata={"name": "default-deny", "namespace": "team"},
            spec={"podSelector": {}, "policyTypes": ["Ingress"]},
        )


def _replicated(bad: bool) -> None:
    labels = {"app.kubernetes.io/name": "api"}
    k8s.apps.v1.Deployment(
        "api",
        metadata={"name": "api", "namespace": "default"},
        spec={
            "replicas": 3,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod([container()])},
        },
    )
    if not bad:
        k8s.policy.v1.PodDisruptionBudget(
            "api-pdb",
            metadata={"name": "api", "namespace": "default"},
            spec={"maxUnavailable": 1, "selector": {"matchLabels": labels}},
        )


MUTATIONS: dict[str, Mutation] = {m.policy: m for m in _cases()}
