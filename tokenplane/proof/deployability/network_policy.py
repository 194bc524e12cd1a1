"""NetworkPolicies and security groups for pods are enforced only where the cluster's CNI enforces them.

The API server accepts a NetworkPolicy whatever the CNI; the EKS VPC CNI
enforces it only with ``enableNetworkPolicy: "true"`` in the add-on's
configuration (VPC CNI 1.14+). Otherwise every default-deny and allow-list is
silently ignored: the stack deploys, but wide open.

Likewise a SecurityGroupPolicy is accepted on every EKS cluster (its CRD is EKS's own), but its groups reach a
pod only when the VPC CNI runs with ``ENABLE_POD_ENI=true`` and the cluster's role may manage branch network
interfaces (``AmazonEKSVPCResourceController``): otherwise pods keep the nodes' groups, and the rules the policy
was meant to apply (a database admitting only the pod's group) never hold.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph

RULE = "netpol-enforced"
POD_GROUPS = "pod-groups-enforced"
ADDON = "aws:eks/addon:Addon"
CLUSTER = "aws:eks/cluster:Cluster"
ROLE = "aws:iam/role:Role"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
VPC_RESOURCE_CONTROLLER = "arn:aws:iam::aws:policy/AmazonEKSVPCResourceController"
ENFORCING_CHARTS = ("tigera-operator", "calico", "cilium")  # CNIs or policy engines that enforce on their own


def _config(addon_config: object) -> dict[str, object]:
    if not isinstance(addon_config, str) or not addon_config:
        return {}
    try:
        config = json.loads(addon_config)
    except json.JSONDecodeError:
        return {}
    return config if isinstance(config, dict) else {}


def _enforces(addon_config: object) -> bool:
    return str(_config(addon_config).get("enableNetworkPolicy", "")).lower() == "true"


def _pod_eni(addon_config: object) -> bool:
    env = _config(addon_config).get("env")
    return isinstance(env, dict) and str(env.get("ENABLE_POD_ENI", "")).lower() == "true"


def check_pod_groups(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        policies = graph.kube(region, "SecurityGroupPolicy")
        clusters = graph.of_type(CLUSTER, region)
        if not policies or not clusters:
            continue  # a cluster made outside the program: its CNI and role are configured there
        names = ", ".join(f"{p.namespace}/{p.name}" for p in policies)
        cni = [a for a in graph.of_type(ADDON, region) if a.inputs.get("addonName") == "vpc-cni"]
        if not any(_pod_eni(a.inputs.get("configurationValues")) for a in cni):
            yield Finding(
                POD_GROUPS,
                cni[0].urn if cni else policies[0].urn,
                f"SecurityGroupPolicy {names} in {region}, but the VPC CNI runs without ENABLE_POD_ENI: pods keep "
                "the nodes' security groups, and the policies' groups are never applied",
                'set the vpc-cni add-on\'s configuration_values env to {"ENABLE_POD_ENI": "true"}',
            )
        for cluster in clusters:
            roles = [graph.by_urn[u] for u in cluster.property_dependencies.get("roleArn", []) if u in graph.by_urn]
            for role in (r for r in roles if r.type == ROLE):
                attached = [
                    a.inputs.get("policyArn")
                    for a in graph.of_type(ATTACHMENT)
                    if role.urn in a.property_dependencies.get("role", [])
                ] + list(role.inputs.get("managedPolicyArns") or [])
                if VPC_RESOURCE_CONTROLLER not in attached:
                    yield Finding(
                        POD_GROUPS,
                        role.urn,
                        f"SecurityGroupPolicy {names} in {region}, but cluster {cluster.name}'s role {role.name} lacks "
                        "AmazonEKSVPCResourceController: EKS cannot give pods their own network interfaces",
                        f"attach {VPC_RESOURCE_CONTROLLER} to {role.name}",
                    )


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        policies = graph.kube(region, "NetworkPolicy")
        if not policies:
            continue
        if any(r.inputs.get("chart") in ENFORCING_CHARTS for r in graph.of_type(HELM_RELEASE, region)):
            continue
        cni = [a for a in graph.of_type(ADDON, region) if a.inputs.get("addonName") == "vpc-cni"]
        if any(_enforces(a.inputs.get("configurationValues")) for a in cni):
            continue
        yield Finding(
            RULE,
            cni[0].urn if cni else policies[0].urn,
            f"{len(policies)} NetworkPolicies in {region}, but the VPC CNI's network policy agent is off: "
            "none of them is enforced",
            'set the vpc-cni add-on\'s configuration_values to {"enableNetworkPolicy": "true"}',
        )
