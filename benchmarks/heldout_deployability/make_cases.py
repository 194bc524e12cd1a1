"""Writes the held-out cases: each program case is examples/single-region with one edit, each spec case
stacks/minimal.yaml with one edit. Run once (python make_cases.py); the folders it writes are committed, so the
cases stay fixed even if the example changes later. An edit that no longer applies raises rather than writing a
case without its defect."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXAMPLE = ROOT / "examples" / "single-region"
MINIMAL = ROOT / "stacks" / "minimal.yaml"

# HELDOUT_HARDENED=1 writes, under hardened/, the cases that add workloads again with those workloads made to pass
# the pod-hardening, limits, PDB, NetworkPolicy and registry policies (an app image of our own on 8000 instead of
# nginx on 80). Same defects; it separates what the deployability checks say from those policies' findings.
HARDENED = os.environ.get("HELDOUT_HARDENED") == "1"
PORT = 8000 if HARDENED else 80
OUT = HERE / "hardened" if HARDENED else HERE
APP_IMAGE = "123456789012.dkr.ecr.eu-central-1.amazonaws.com/acme/docs-portal:1.4.2"
POD_SECURITY = (
    '"securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "seccompProfile": {"type": "RuntimeDefault"}},'
)
CONTAINER_SECURITY = (
    '"securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, '
    '"capabilities": {"drop": ["ALL"]}},'
)
TMP_MOUNT = '"volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],'
TMP_VOLUME = '"volumes": [{"name": "tmp", "emptyDir": {}}],'

# A namespace of our own (no default-deny policy), so an added workload's only fault is the one under test.
TOOLS = """
# --- held-out case ---------------------------------------------------------------------------------
tools_ns = k8s.core.v1.Namespace("tools-ns", metadata={"name": "tools"}, opts=on_cluster)
on_tools = pulumi.ResourceOptions(provider=kube, depends_on=[cluster.system_nodes, tools_ns])
"""
if HARDENED:
    TOOLS += """k8s.networking.v1.NetworkPolicy(
    "tools-default-deny",
    metadata={"name": "default-deny", "namespace": "tools"},
    spec={"podSelector": {}, "policyTypes": ["Ingress"]},
    opts=on_tools,
)
k8s.networking.v1.NetworkPolicy(
    "tools-allow",
    metadata={"name": "allow-tools-and-monitoring", "namespace": "tools"},
    spec={
        "podSelector": {},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [
                    {"podSelector": {}},
                    {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
                    {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "llm-gateway"}}},
                ]
            }
        ],
    },
    opts=on_tools,
)
"""


def web(
    name: str = "docs-portal",
    *,
    namespace: str = "tools",
    pod_app: str | None = None,
    selector_app: str | None = None,
    target_port: int | str = PORT,
    probe_port: int = PORT,
    env: str = "[]",
    opts: str = "on_tools",
    sa: str | None = None,
    replicas: int | None = 2,
) -> str:
    """An nginx Deployment (listening on 80) and its Service; the keyword arguments put one fault in."""
    pod_app = pod_app or name
    selector_app = selector_app or name
    sa_line = f'"serviceAccountName": "{sa}",' if sa else ""
    # An autoscaled Deployment leaves replicas to its autoscaler.
    replicas_line = f'"replicas": {replicas},' if replicas is not None else ""
    image = APP_IMAGE if HARDENED else "public.ecr.aws/nginx/nginx:1.27"
    limits = '{"cpu": "500m", "memory": "256Mi"}' if HARDENED else '{"memory": "256Mi"}'
    pod_extra = f"{POD_SECURITY} {TMP_VOLUME}" if HARDENED else ""
    container_extra = f" {CONTAINER_SECURITY} {TMP_MOUNT}" if HARDENED else ""
    pdb = ""
    if HARDENED:
        pdb = f'''k8s.policy.v1.PodDisruptionBudget(
    "{name}-pdb",
    metadata={{"name": "{name}", "namespace": "{namespace}"}},
    spec={{"maxUnavailable": 1, "selector": {{"matchLabels": {{"app": "{pod_app}"}}}}}},
    opts={opts},
)
'''
    return f'''
web = k8s.apps.v1.Deployment(
    "{name}",
    metadata={{"name": "{name}", "namespace": "{namespace}", "labels": {{"app": "{pod_app}"}}}},
    spec={{
        {replicas_line}
        "selector": {{"matchLabels": {{"app": "{pod_app}"}}}},
        "template": {{
            "metadata": {{"labels": {{"app": "{pod_app}"}}}},
            "spec": {{
                {sa_line}{pod_extra}
                "containers": [
                    {{
                        "name": "web",
                        "image": "{image}",
                        "ports": [{{"name": "http", "containerPort": {PORT}}}],
                        "env": {env},{container_extra}
                        "resources": {{"requests": {{"cpu": "100m", "memory": "128Mi"}}, "limits": {limits}}},
                        "readinessProbe": {{"httpGet": {{"path": "/", "port": {probe_port}}}, "periodSeconds": 5}},
                    }}
                ],
            }},
        }},
    }},
    opts={opts},
)
web_svc = k8s.core.v1.Service(
    "{name}-svc",
    metadata={{"name": "{name}", "namespace": "{namespace}", "labels": {{"app": "{name}"}}}},
    spec={{"selector": {{"app": "{selector_app}"}}, "ports": [{{"name": "http", "port": 80, "targetPort": {target_port!r}}}]}},
    opts={opts},
)
{pdb}'''


def irsa(trust_namespace: str, object_resource: str) -> str:
    """A pod in ``tools`` that reads the registry bucket with an IRSA role; the arguments put one fault in."""
    return (
        TOOLS
        + f"""
import json as _json

issuer_host = cluster.oidc_issuer.apply(lambda u: u.replace("https://", ""))
reader_role = aws.iam.Role(
    "docs-reader-role",
    assume_role_policy=pulumi.Output.all(cluster.oidc_provider_arn, issuer_host).apply(
        lambda a: _json.dumps(
            {{
                "Version": "2012-10-17",
                "Statement": [
                    {{
                        "Effect": "Allow",
                        "Principal": {{"Federated": a[0]}},
                        "Action": "sts:AssumeRoleWithWebIdentity",
                        "Condition": {{
                            "StringEquals": {{
                                f"{{a[1]}}:sub": "system:serviceaccount:{trust_namespace}:docs-reader",
                                f"{{a[1]}}:aud": "sts.amazonaws.com",
                            }}
                        }},
                    }}
                ],
            }}
        )
    ),
    tags=tags,
    opts=on_aws,
)
aws.iam.RolePolicy(
    "docs-reader-s3",
    role=reader_role.id,
    policy=registry.arn.apply(
        lambda arn: _json.dumps(
            {{
                "Version": "2012-10-17",
                "Statement": [
                    {{"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": arn}},
                    {{"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": {object_resource}}},
                ],
            }}
        )
    ),
    opts=on_aws,
)
reader_sa = k8s.core.v1.ServiceAccount(
    "docs-reader-sa",
    metadata={{"name": "docs-reader", "namespace": "tools", "annotations": {{"eks.amazonaws.com/role-arn": reader_role.arn}}}},
    opts=on_tools,
)
on_tools_sa = pulumi.ResourceOptions(provider=kube, depends_on=[cluster.system_nodes, tools_ns, reader_sa])
"""
        + web(sa="docs-reader", opts="on_tools_sa")
        + """
# The pod's job: sync the model cards from the registry bucket (s3 cp needs GetObject on the objects).
reader_job = k8s.batch.v1.Job(
    "docs-sync",
    metadata={"name": "docs-sync", "namespace": "tools"},
    spec={
        "backoffLimit": 2,
        "template": {
            "spec": {
                "serviceAccountName": "docs-reader",
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "sync",
                        "image": "public.ecr.aws/aws-cli/aws-cli:2.22.0",
                        "args": ["s3", "cp", "--recursive", registry.bucket.apply(lambda b: f"s3://{b}/cards/"), "/tmp/cards/"],
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                    }
                ],
            }
        },
    },
    opts=on_tools_sa,
)
"""
    )


def rds(*, public: bool, ingress_port: int) -> str:
    """A Postgres for the docs portal, with its security group; the arguments put one fault in."""
    subnets = "network.public_subnet_ids" if public else "network.private_subnet_ids"
    cidr = '"0.0.0.0/0"' if public else "network.vpc_cidr"
    return f"""
# --- held-out case: a Postgres for the docs portal --------------------------------------------------
db_sg = aws.ec2.SecurityGroup(
    "docs-db-sg",
    vpc_id=network.vpc_id,
    description="docs portal postgres",
    ingress=[aws.ec2.SecurityGroupIngressArgs(protocol="tcp", from_port={ingress_port}, to_port={ingress_port}, cidr_blocks=[{cidr}])],
    tags=tags,
    opts=on_aws,
)
db_subnets = aws.rds.SubnetGroup("docs-db-subnets", subnet_ids={subnets}, tags=tags, opts=on_aws)
db = aws.rds.Instance(
    "docs-db",
    engine="postgres",
    engine_version="16.4",
    instance_class="db.t4g.medium",
    allocated_storage=20,
    storage_encrypted=True,
    db_name="docs",
    username="docs",
    manage_master_user_password=True,
    port=5432,
    db_subnet_group_name=db_subnets.name,
    vpc_security_group_ids=[db_sg.id],
    publicly_accessible={public},
    skip_final_snapshot=True,
    tags=tags,
    opts=on_aws,
)
pulumi.export("docs_db", db.address)
"""


def scaled_object(*, query: str, opts: str) -> str:
    return (
        TOOLS
        + web(name="router-cache", replicas=None)
        + f"""
k8s.apiextensions.CustomResource(
    "router-cache-scaler",
    api_version="keda.sh/v1alpha1",
    kind="ScaledObject",
    metadata={{"name": "router-cache", "namespace": "tools"}},
    spec={{
        "scaleTargetRef": {{"name": "router-cache"}},
        "minReplicaCount": 2,
        "maxReplicaCount": 6,
        "triggers": [
            {{
                "type": "prometheus",
                "metadata": {{
                    "serverAddress": "http://kube-prometheus-stack-prometheus.monitoring.svc:9090",
                    "query": {query!r},
                    "threshold": "4",
                }},
            }}
        ],
    }},
    opts={opts},
)
"""
    )


SECRET = """
k8s.core.v1.Secret(
    "docs-db-credentials",
    metadata={"name": "docs-db-credentials", "namespace": "tools"},
    string_data={"password": "change-me"},
    opts=on_tools,
)
"""

MONITOR = (
    TOOLS
    + """
exporter = k8s.apps.v1.Deployment(
    "blackbox",
    metadata={"name": "blackbox", "namespace": "tools", "labels": {"app": "blackbox"}},
    spec={
        "replicas": 1,
        "selector": {"matchLabels": {"app": "blackbox"}},
        "template": {
            "metadata": {"labels": {"app": "blackbox"}},
            "spec": {
                "containers": [
                    {
                        "name": "blackbox",
                        "image": "quay.io/prometheus/blackbox-exporter:v0.25.0",
                        "ports": [{"name": "http", "containerPort": 9115}],
                        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
                        "readinessProbe": {"httpGet": {"path": "/-/healthy", "port": 9115}},
                    }
                ]
            },
        },
    },
    opts=on_tools,
)
k8s.core.v1.Service(
    "blackbox-svc",
    metadata={"name": "blackbox", "namespace": "tools", "labels": {"app": "blackbox"}},
    spec={"selector": {"app": "blackbox"}, "ports": [{"name": "http", "port": 9115, "targetPort": "http"}]},
    opts=on_tools,
)
# The ServiceMonitor CRD comes with kube-prometheus-stack: wait for its release.
k8s.apiextensions.CustomResource(
    "blackbox-monitor",
    api_version="monitoring.coreos.com/v1",
    kind="ServiceMonitor",
    metadata={"name": "blackbox", "namespace": "tools"},
    spec={
        "selector": {"matchLabels": {"app": "blackbox"}},
        "endpoints": [{"port": "http", "path": "/metrics", "interval": "30s"}],
    },
    opts=pulumi.ResourceOptions(provider=kube, depends_on=[cluster.system_nodes, tools_ns, observability]),
)
"""
)

OBS_ANCHOR = "model_gateway = tp.ModelGateway("
POOL_NODES = "nodes=gpus,  # its replicas require this group's labels and tolerate its taints"
PLACEMENT = "placement = Placement(pool=chat.name, min_replicas=1, max_replicas=2)"
POOL_OPTS = "    pulumi.ResourceOptions.merge(ready, pulumi.ResourceOptions(depends_on=list(published.values()))),\n)"
CERT_USE = "certificate_arn=certificate_arn)"

# (id, expected reason, [(old, new)] edits, text appended at the end)
PROGRAMS: list[tuple[str, str, list[tuple[str, str]], str]] = [
    (
        "p01-service-selector-typo",
        "Service 'docs-portal' selects app=docs-portl but its pods are labelled app=docs-portal: no endpoints, unreachable",
        [],
        TOOLS + web(selector_app="docs-portl"),
    ),
    (
        "p02-service-targetport-wrong",
        f"Service 'docs-portal' forwards to targetPort 8080 but the container listens on {PORT}: connections refused",
        [],
        TOOLS + web(target_port=8080),
    ),
    (
        "p03-secret-name-typo",
        "Deployment reads secretKeyRef 'docs-db-credentails' but the Secret is 'docs-db-credentials': CreateContainerConfigError",
        [],
        TOOLS
        + SECRET
        + web(
            env='[{"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "docs-db-credentails", "key": "password"}}}]'
        ),
    ),
    (
        "p04-namespace-not-created",
        "Deployment/Service into namespace 'llm-servng' (typo of llm-serving) that nothing creates: API rejects them",
        [],
        web(namespace="llm-servng", opts="on_cluster"),
    ),
    (
        "p05-scaledobject-before-keda",
        "KEDA ScaledObject does not depend on the KEDA Helm release that installs its CRD: first `pulumi up` fails (no kind ScaledObject)",
        [],
        scaled_object(query='sum(vllm:num_requests_waiting{namespace="llm-serving"})', opts="on_tools"),
    ),
    (
        "p06-pool-node-label-typo",
        "VllmPool requires node label tokenplane.io/pool=chta but the GPU nodes carry tokenplane.io/pool=chat: replicas Pending forever",
        [
            (
                POOL_NODES,
                'nodes=tp.NodeSelection(labels={"tokenplane.io/pool": "chta"}),  # nodes of the GPU group above\n        placement=placement,',
            )
        ],
        "",
    ),
    (
        "p07-k8s-version-unsupported",
        "EKS kubernetes_version 1.29 is past end of standard and extended support (Dec 2026): cluster create refused",
        [
            (
                'kubernetes_version="1.35",  # in EKS standard support (tokenplane/proof/deployability/support.json)',
                'kubernetes_version="1.29",  # the version our other clusters run',
            )
        ],
        "",
    ),
    (
        "p08-irsa-trust-wrong-namespace",
        "IRSA role trusts system:serviceaccount:llm-serving:docs-reader but the ServiceAccount is in 'tools': AssumeRoleWithWebIdentity denied",
        [],
        irsa("llm-serving", 'f"{arn}/*"'),
    ),
    (
        "p09-s3-getobject-on-bucket-arn",
        "s3:GetObject granted on the bucket ARN, not its objects (arn/*): every object read is AccessDenied",
        [],
        irsa("tools", "arn"),
    ),
    (
        "p10-postgres-public",
        "Postgres publicly_accessible in public subnets with 0.0.0.0/0 on 5432: the store is reachable from the internet",
        [],
        rds(public=True, ingress_port=5432),
    ),
    (
        "p11-db-sg-wrong-port",
        "Postgres listens on 5432 but its security group opens 3306 (MySQL) only: the database is unreachable from the pods",
        [],
        rds(public=False, ingress_port=3306),
    ),
    (
        "p12-readiness-probe-wrong-port",
        f"readinessProbe on port 8080 while {'the container' if HARDENED else 'nginx'} listens on {PORT}: pods never Ready, "
        "rollout never completes (pulumi times out)",
        [],
        TOOLS + web(probe_port=8080),
    ),
    (
        "p13-keda-query-metric-typo",
        "ScaledObject queries vllm:num_requests_waitng (typo of vllm:num_requests_waiting): a metric nothing exports, never scales",
        [],
        scaled_object(
            query='sum(vllm:num_requests_waitng{namespace="llm-serving"})',
            opts="pulumi.ResourceOptions(provider=kube, depends_on=[cluster.system_nodes, tools_ns, addons.keda])",
        ),
    ),
    (
        "p14-certificate-never-validated",
        "ACM certificate requested with DNS validation but no validation record is created: never ISSUED, the gateway's HTTPS listener fails",
        [
            (CERT_USE, "certificate_arn=gateway_cert.arn)"),
            (
                OBS_ANCHOR,
                'gateway_cert = aws.acm.Certificate(\n    "gateway-cert", domain_name="api.acme.example", '
                'validation_method="DNS", tags=tags, opts=on_aws\n)\n' + OBS_ANCHOR,
            ),
        ],
        "",
    ),
]

CORRECT_PROGRAMS: list[tuple[str, str, list[tuple[str, str]], str]] = [
    (
        "c01-servicemonitor-after-kps",
        "correct: a ServiceMonitor that depends on the Observability component (the kube-prometheus-stack release)",
        [],
        MONITOR,
    ),
    (
        "c02-existing-namespace",
        "correct: a Deployment and Service in the 'default' namespace, which every cluster has",
        [],
        web(namespace="default", opts="pulumi.ResourceOptions(provider=kube, depends_on=[cluster.system_nodes])"),
    ),
    (
        "c03-pool-more-replicas-longer-timeout",
        "correct: the pool at 2..4 replicas (its node group follows the placement) with create/update timeouts raised to 40m",
        [
            (PLACEMENT, "placement = Placement(pool=chat.name, min_replicas=2, max_replicas=4)"),
            (
                POOL_OPTS,
                "    pulumi.ResourceOptions.merge(\n        ready,\n        pulumi.ResourceOptions(\n"
                "            depends_on=list(published.values()),\n"
                '            custom_timeouts=pulumi.CustomTimeouts(create="40m", update="40m"),\n        ),\n    ),\n)',
            ),
        ],
        "",
    ),
]


def spec_edit(edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(MINIMAL.read_text())
    edit(doc)
    return doc


def _s1(d: dict[str, Any]) -> None:
    d["models"][0].update(
        name="llama-70b",
        preset="llama-3.1-70b",
        uri="s3://minimal-models/llama-70b/v1/",
        tokenizer="meta-llama/Llama-3.1-70B-Instruct",
    )
    d["pools"][0]["model"] = "llama-70b"


def _s2(d: dict[str, Any]) -> None:
    d["regions"][0]["azs"] = ["us-east-1a"]


def _s3(d: dict[str, Any]) -> None:
    d["regions"][0]["azs"] = ["us-west-2a", "us-west-2b"]


def _s4(d: dict[str, Any]) -> None:
    d["pools"][0].update(instance_type="g6.12xlarge", tensor_parallel=8)


def _c4(d: dict[str, Any]) -> None:
    d["regions"][0].update(azs=["us-east-1a", "us-east-1b", "us-east-1c"], gpu_quota=8)
    d["regions"][0]["pools"][0].update(min_replicas=2, max_replicas=6)


SPECS = [
    (
        "s01-70b-on-one-l4",
        "llama-3.1-70b (~140 GB bf16) on one 24 GB L4 with tensor_parallel 1: weights do not fit, engine never starts",
        _s1,
    ),
    ("s02-single-az", "one AZ only: EKS requires subnets in at least two AZs, cluster create fails", _s2),
    ("s03-azs-of-another-region", "azs us-west-2a/b in cloud_region us-east-1: subnets cannot be created there", _s3),
    (
        "s04-tp-exceeds-node-gpus",
        "tensor_parallel 8 on g6.12xlarge (4 L4 per node): a replica needs 8 GPUs on one node, Pending forever",
        _s4,
    ),
]
CORRECT_SPECS = [
    ("c04-three-azs-more-replicas", "correct: three AZs, 2..6 L4 replicas, gpu_quota 8 covers the maximum", _c4),
]


# The hardened mode's edits to the Job and the exporter, which are written out in full above.
HARDEN_JOB = [
    ('"restartPolicy": "Never",', f'"restartPolicy": "Never", {POD_SECURITY} {TMP_VOLUME}'),
    (
        '"resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},',
        '"resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}, '
        f"{CONTAINER_SECURITY} {TMP_MOUNT}",
    ),
]
HARDEN_EXPORTER = [
    (
        '"image": "quay.io/prometheus/blackbox-exporter:v0.25.0",',
        '"image": "123456789012.dkr.ecr.eu-central-1.amazonaws.com/mirror/blackbox-exporter:v0.25.0", '
        + CONTAINER_SECURITY,
    ),
    ('"limits": {"memory": "128Mi"}},', '"limits": {"cpu": "200m", "memory": "128Mi"}},'),
    (
        '"spec": {\n                "containers": [\n                    {\n                        "name": "blackbox",',
        '"spec": {\n                ' + POD_SECURITY + '\n                "containers": [\n                    {\n'
        '                        "name": "blackbox",',
    ),
]


def harden(case_id: str, tail: str) -> str:
    for old, new in HARDEN_JOB + HARDEN_EXPORTER:
        if old in tail:
            tail = tail.replace(old, new)
    return tail


def folder(case_id: str) -> str:
    """A case's folder: its id as a Python package name (see write_program)."""
    return case_id.replace("-", "_")


def write_program(case_id: str, edits: list[tuple[str, str]], tail: str) -> Path:
    if HARDENED:
        tail = harden(case_id, tail)
    out = OUT / folder(case_id)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(EXAMPLE, out, ignore=shutil.ignore_patterns("__pycache__"))
    src = (out / "__main__.py").read_text()
    for old, new in edits:
        if src.count(old) != 1:
            raise SystemExit(f"{case_id}: edit anchor {old!r} found {src.count(old)} times, expected once")
        src = src.replace(old, new)
    (out / "__main__.py").write_text(src + tail)
    # A package of its own: mypy (pyproject's files include benchmarks/) names each program by its folder,
    # where bare __main__.py files would all be one duplicate module "__main__".
    (out / "__init__.py").write_text(f'"""Held-out case {case_id}: a Pulumi program (its __main__.py)."""\n')
    return out


def main() -> None:
    cases = []
    for correct, group in ((False, PROGRAMS), (True, CORRECT_PROGRAMS)):
        for case_id, expected, edits, tail in group:
            if HARDENED and "k8s.apps.v1.Deployment" not in tail:
                continue  # adds no workload of its own: nothing to harden
            write_program(case_id, edits, tail)
            cases.append(
                {"id": case_id, "kind": "program", "path": folder(case_id), "expected": expected, "correct": correct}
            )
    if HARDENED:
        (OUT / "__init__.py").write_text('"""The hardened re-run\'s cases (see ../README.md)."""\n')
        (OUT / "cases.yaml").write_text(yaml.safe_dump({"cases": cases}, sort_keys=False, width=200))
        return
    for correct, sgroup in ((False, SPECS), (True, CORRECT_SPECS)):
        for case_id, expected, edit in sgroup:
            out = HERE / folder(case_id)
            out.mkdir(exist_ok=True)
            (out / "spec.yaml").write_text(
                f"# held-out case {case_id}: {expected}\n" + yaml.safe_dump(spec_edit(edit), sort_keys=False)
            )
            cases.append(
                {
                    "id": case_id,
                    "kind": "spec",
                    "path": f"{folder(case_id)}/spec.yaml",
                    "expected": expected,
                    "correct": correct,
                }
            )
    (HERE / "cases.yaml").write_text(yaml.safe_dump({"cases": cases}, sort_keys=False, width=200))


if __name__ == "__main__":
    main()
