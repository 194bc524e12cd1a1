"""What must exist in the account before ``pulumi up``, which the stack does not (and should not) create.

Secrets (their values never belong in the stack), GPU quota (AWS decides it
per account, region and instance family) and the parent domain's delegation.
``tokenplane preflight`` is where these are checked against a real account;
offline they are listed, so that nobody learns them from a failed update.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tokenplane.catalog import instance_type
from tokenplane.contract import PREREQUISITES_ANNOTATION
from tokenplane.proof.deployability.findings import Prerequisite
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph, lookup, need
from tokenplane.runtime_env import env_variables
from tokenplane.spec import PlatformSpec

# Service Quotas codes of the EC2 on-demand vCPU quotas, by instance family letter
# (Service Quotas console, service "ec2": "Running On-Demand P instances" and "... G and VT instances").
GPU_VCPU_QUOTAS = {"p": "L-417A185B", "g": "L-DB2E81BA"}


def prerequisites(graph: Graph) -> list[Prerequisite]:
    out: list[Prerequisite] = []
    refs = graph.secret_refs()
    for region in graph.spec.regions if graph.spec is not None else []:
        for ref in sorted({r for r in refs if r.startswith("aws-sm://")}):
            out.append(
                Prerequisite(
                    "secret",
                    region.cloud_region,
                    ref.removeprefix("aws-sm://"),
                    "Secrets Manager secret the gateways read in this region (a replica secret will do)",
                )
            )
    for workload in graph.workloads():
        annotation = str((lookup(workload.manifest, "metadata.annotations") or {}).get(PREREQUISITES_ANNOTATION, ""))
        for item in filter(None, (p.strip() for p in annotation.split(","))):
            kind, _, name = item.partition("/")
            keys = sorted(_keys(workload.pod_spec(), name))
            out.append(
                Prerequisite(
                    f"kubernetes-{kind}",
                    _cloud(graph, workload.resource.region),
                    f"{workload.namespace}/{name}",
                    f"read by {workload.kind} {workload.name}" + (f"; keys: {', '.join(keys)}" if keys else ""),
                )
            )
    vcpus: dict[tuple[str, str], float] = defaultdict(float)
    for group in graph.of_type(NODE_GROUP):
        types = need(group, group.inputs.get("instanceTypes") or None, "instanceTypes", "GPU quota needs them")
        most = need(group, lookup(group.inputs, "scalingConfig.maxSize"), "scalingConfig.maxSize", "not rendered")
        name = str(types[0])
        family = name[0]
        if family in GPU_VCPU_QUOTAS:
            vcpus[(_cloud(graph, group.region), family)] += float(most) * instance_type(name).vcpus
    for (cloud, family), total in sorted(vcpus.items()):
        out.append(
            Prerequisite(
                "quota",
                cloud,
                f"ec2 {GPU_VCPU_QUOTAS[family]}",
                f"on-demand {family.upper()}-family vCPUs: {total:.0f} at every GPU node group's maximum",
            )
        )
    if graph.spec is not None:
        out.extend(_declared(graph.spec))
    return out


def _declared(spec: PlatformSpec) -> list[Prerequisite]:
    """What the spec itself says must exist: assumed offerings, admin roles, its own certificates."""
    out: list[Prerequisite] = []
    for region in spec.regions:
        for name in region.assume_offered:
            out.append(
                Prerequisite(
                    "assumed-offering",
                    region.cloud_region,
                    name,
                    "assumed offered (regions[].assume_offered) though the offering catalog does not list it",
                )
            )
    for arn in spec.platform.admin_role_arns:
        out.append(
            Prerequisite(
                "iam-role",
                "global",
                arn,
                "cluster admin on every EKS cluster (an access entry); EKS refuses an entry for a missing role",
            )
        )
    for variable in sorted(env_variables(spec)):
        out.append(
            Prerequisite(
                "stack-config",
                "global",
                f"tokenplane:env_secrets.{variable}",
                f"the value of env://{variable}, which the stack puts in the gateway's env Secret: pulumi config "
                f"set --secret --path 'tokenplane:env_secrets.{variable}' <value>",
            )
        )
    if spec.platform.domain is not None and spec.platform.hosted_zone_id is not None:
        out.append(
            Prerequisite(
                "dns",
                "global",
                f"{spec.platform.hosted_zone_id} ({spec.platform.domain})",
                "a Route 53 public hosted zone for the domain, delegated from its parent (NS records) before "
                "pulumi up: the gateway certificates validate through it",
            )
        )
    for name, arn in spec.platform.certificate_arns.items():
        out.append(
            Prerequisite(
                "certificate",
                spec.region(name).cloud_region,
                arn,
                f"ISSUED ACM certificate for the gateway's TLS listener, naming {', '.join(gateway_hosts(spec, name))}",
            )
        )
    return out


def _keys(pod: dict[str, Any], name: str) -> set[str]:
    """The keys of Secret/ConfigMap ``name`` that the pod's env entries read."""
    keys = set()
    for container in pod.get("containers") or []:
        for env in container.get("env") or []:
            for ref in (env.get("valueFrom") or {}).values():
                if isinstance(ref, dict) and ref.get("name") == name and "key" in ref:
                    keys.add(str(ref["key"]))
    return keys


def _cloud(graph: Graph, region: str | None) -> str:
    return graph.cloud_region(region) or region or "global"


def gateway_hosts(spec: PlatformSpec, region: str) -> list[str]:
    """The hosts clients reach ``region``'s gateway by (GlobalRouting's names); its certificate must name them."""
    domain = spec.platform.domain
    if domain is None:
        return []  # no domain: clients use the load balancer's own name, which no certificate of ours names
    return [f"api.{domain}", f"{region}.regions.{domain}"]
