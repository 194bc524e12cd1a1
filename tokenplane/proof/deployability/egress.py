"""Pods that call AWS APIs keep the egress they need: DNS, and HTTPS to the AWS endpoints.

``flows`` holds NetworkPolicies to the flows between the platform's pods and to its data stores (DNS included for a
pod that names a Service). A pod that calls AWS itself, the weight fetch and publish Jobs copying from S3, every pod
with an IRSA role, needs two more flows out of its namespace, which an Egress policy (a namespace's
``default-deny-egress``) may cut:

- DNS to the cluster's CoreDNS (kube-system, k8s-app=kube-dns) on UDP 53, to resolve the AWS endpoint names;
- TCP 443 to those endpoints: STS (``AssumeRoleWithWebIdentity`` for IRSA's credentials), S3 and the rest. They are
  AWS addresses outside the cluster, or interface VPC endpoints inside the VPC. An ipBlock rule to the VPC's
  addresses alone counts only where the VPC has an interface endpoint (private DNS on) for the services the pod is
  known to call: STS for an IRSA role (the token exchange comes before any other call), S3 for an ``s3://`` URL.
  Without one the SDK resolves the public name to a public address, which the policy drops; an S3 gateway endpoint
  does not help, since its traffic still goes to S3's public prefixes
  (https://docs.aws.amazon.com/vpc/latest/privatelink/vpc-endpoints-s3.html ,
  https://docs.aws.amazon.com/vpc/latest/privatelink/create-interface-endpoint.html ,
  https://kubernetes.io/docs/concepts/services-networking/network-policies/ : an ipBlock matches the destination).

Without them the SDK's first call fails (``Could not connect to the endpoint URL`` / name resolution), the Job
retries to its backoffLimit and the pool's pods never get weights. A pod calls AWS when its ServiceAccount carries
an IRSA role (``eks.amazonaws.com/role-arn``) or its containers name an ``s3://`` URL.

It cannot see: an egress policy that allows only some AWS prefixes (the S3 prefix list's CIDRs) beside the one
address read here, and calls configured only inside an image.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator

from tokenplane.proof.deployability import vpc_routes
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.deployability.reachability import Pod, Region, pod_template, regions
from tokenplane.proof.deployability.security_groups import Network

RULE = "egress-allowed"
IRSA_ANNOTATION = "eks.amazonaws.com/role-arn"
HTTPS = 443
# One public AWS address (an S3 endpoint in us-east-1's published ranges) standing for "the AWS endpoints outside
# the VPC"; a rule to 0.0.0.0/0 (with RFC 1918 excepted or not) holds it.
AWS_PUBLIC: list[Network] = [ipaddress.IPv4Network("52.216.0.1/32")]


def _why_aws(graph: Graph, region: Region, pod: Pod) -> tuple[str, list[str]] | None:
    """Why ``pod`` calls AWS APIs and the services it calls (IAM's names), or None if nothing says it does."""
    if pod.workload is None:
        return None
    spec = pod_template(pod.workload).get("spec") or {}
    account = str(spec.get("serviceAccountName") or "default")
    copies = "s3://" in json.dumps([*(spec.get("initContainers") or []), *(spec.get("containers") or [])])
    for sa in graph.kube(region.name, "ServiceAccount"):
        annotations = lookup(sa.manifest, "metadata.annotations") or {}
        if sa.namespace == pod.namespace and sa.name == account and IRSA_ANNOTATION in annotations:
            services = ["sts", *(["s3"] if copies else [])]
            return f"its ServiceAccount {account} has an IRSA role (STS AssumeRoleWithWebIdentity)", services
    if copies:
        return "its containers copy from or to an s3:// URL", ["s3"]
    return None


def _lacking(graph: Graph, region: Region, services: list[str]) -> list[str] | None:
    """The services without an interface endpoint (private DNS) in the pods' VPC; None where the VPC is unknown."""
    vpcs = {v.urn: v for s in region.pod_subnets if (v := vpc_routes.vpc_of(graph, s)) is not None}
    if len(vpcs) != 1:
        return None
    have = vpc_routes.endpoints(graph, next(iter(vpcs.values())), None)  # no table: interface endpoints only
    return [s for s in dict.fromkeys(services) if not any(e == s or e.startswith(f"{s}.") for e in have)]


def check(graph: Graph) -> Iterator[Finding]:
    for region in regions(graph):
        vpc = region.pod_networks[:1]  # an interface VPC endpoint's address is one of the VPC's
        for pod in region.pods:
            calls = _why_aws(graph, region, pod)
            if calls is None:
                continue
            why, services = calls
            dns = region.dns_egress(pod)
            if not dns.allowed:
                yield Finding(
                    RULE,
                    pod.urn,
                    f"{pod} calls AWS APIs ({why}) but cannot resolve their names: egress to cluster DNS "
                    f"(kube-system, k8s-app=kube-dns):53/UDP is blocked: {'; '.join(dns.blockers)}",
                    "add an egress rule to {namespaceSelector {kubernetes.io/metadata.name: kube-system}, podSelector "
                    f"{{k8s-app: kube-dns}}}} on UDP and TCP 53 to a NetworkPolicy that selects {pod}",
                )
            public = region.pod_egress_to(pod, AWS_PUBLIC, HTTPS)
            if public.allowed:
                continue
            if vpc and region.pod_egress_to(pod, vpc, HTTPS).allowed:
                lacking = _lacking(graph, region, services)
                if lacking:
                    yield Finding(
                        RULE,
                        pod.urn,
                        f"{pod} calls AWS APIs ({why}) but its egress on TCP 443 reaches only addresses inside the "
                        f"VPC, and the VPC has no interface endpoint for {', '.join(lacking)}: those calls go to "
                        f"public AWS addresses, which the NetworkPolicy drops ({'; '.join(public.blockers)})",
                        f"add interface VPC endpoints with privateDnsEnabled for {', '.join(lacking)} (an S3 gateway "
                        f"endpoint is not enough: its traffic goes to S3's public prefixes), or allow egress on TCP "
                        f"443 to ipBlock 0.0.0.0/0 in a NetworkPolicy that selects {pod}",
                    )
                continue
            yield Finding(
                RULE,
                pod.urn,
                f"{pod} calls AWS APIs ({why}) but its egress on TCP 443 reaches neither AWS's public endpoints "
                f"nor the VPC's interface endpoints: {'; '.join(public.blockers)}",
                f"add an egress rule on TCP 443 to ipBlock 0.0.0.0/0 (or the VPC's CIDR, with interface endpoints "
                f"for STS and S3) to a NetworkPolicy that selects {pod}",
            )
