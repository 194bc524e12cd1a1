"""NetworkPolicies are enforced only where the cluster's CNI enforces them.

The API server accepts a NetworkPolicy whatever the CNI; the EKS VPC CNI
enforces it only with ``enableNetworkPolicy: "true"`` in the add-on's
configuration (VPC CNI 1.14+). Otherwise every default-deny and allow-list is
silently ignored: the stack deploys, but wide open.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph

RULE = "netpol-enforced"
ADDON = "aws:eks/addon:Addon"
ENFORCING_CHARTS = ("tigera-operator", "calico", "cilium")  # CNIs or policy engines that enforce on their own


def _enforces(addon_config: object) -> bool:
    if not isinstance(addon_config, str) or not addon_config:
        return False
    try:
        config = json.loads(addon_config)
    except json.JSONDecodeError:
        return False
    return isinstance(config, dict) and str(config.get("enableNetworkPolicy", "")).lower() == "true"


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
