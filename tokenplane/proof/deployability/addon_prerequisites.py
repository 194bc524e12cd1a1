"""An EKS add-on that needs another component in the cluster is created after it.

``addon-prerequisites``: some add-ons apply manifests that use another project's API, and EKS documents that project
as a prerequisite. Without it the add-on's manifests cannot be applied: the add-on never becomes ACTIVE
(CREATE_FAILED, or DEGRADED with a health issue) and pulumi-aws's create waiter fails ("unexpected state
'CREATE_FAILED', wanted target 'ACTIVE'"). The table (as of 2026-12) lists each such add-on, what it needs, and the
source:

- ``adot`` (AWS Distro for OpenTelemetry) needs cert-manager: its operator's admission webhooks take their serving
  certificate from cert-manager's Certificate and Issuer objects ("ADOT requires that cert-manager is deployed on the
  cluster as a prerequisite", https://docs.aws.amazon.com/eks/latest/userguide/add-ons-adot.html;
  https://aws-otel.github.io/docs/getting-started/adot-eks-add-on/requirements, TLS Certificate Requirement).

The prerequisite counts as present when the program makes it in the add-on's region: a Helm release of its chart
(jetstack's ``cert-manager``), an EKS add-on of its name (``cert-manager``, an EKS community add-on), or its CRD
(``certificates.cert-manager.io``); and as in place only when the add-on waits for it (``depends_on``, directly or
through what it waits for): otherwise Pulumi creates both at once and the add-on is applied before the CRDs exist.
Not judged where the add-on's cluster is not the program's (the cluster may have it already). It cannot see a
prerequisite installed outside the program or by a manifest file (``ConfigFile``, ``ConfigGroup``) of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import CLUSTER, HELM_RELEASE, Graph
from tokenplane.proof.render import RenderedResource

RULE = "addon-prerequisites"
ADDON = "aws:eks/addon:Addon"


class Prerequisite(NamedTuple):
    name: str
    chart: str  # the Helm chart's name
    addon: str  # the EKS add-on's name
    crd: str  # a CRD it installs
    how: str  # how to install it


PREREQUISITES = {
    "adot": Prerequisite(
        "cert-manager",
        "cert-manager",
        "cert-manager",
        "certificates.cert-manager.io",
        "install cert-manager first (the jetstack cert-manager Helm chart with crds.enabled true, or the cert-manager "
        "EKS add-on) and make the adot add-on depend on it (depends_on)",
    ),
}


def _provides(resource: RenderedResource, need: Prerequisite) -> bool:
    if resource.type == HELM_RELEASE:
        chart = resource.inputs.get("chart")
        return isinstance(chart, str) and chart.rstrip("/").rsplit("/", 1)[-1] == need.chart
    if resource.type == ADDON:
        return resource.inputs.get("addonName") == need.addon
    if resource.type.endswith(":CustomResourceDefinition"):
        metadata = resource.inputs.get("metadata")
        return isinstance(metadata, dict) and metadata.get("name") == need.crd
    return False


def check(graph: Graph) -> Iterator[Finding]:
    for addon in graph.of_type(ADDON):
        need = PREREQUISITES.get(str(addon.inputs.get("addonName")))
        if need is None:
            continue
        clusters = [c for c in graph.referenced(addon, "clusterName") if c.type == CLUSTER]
        if not clusters:
            continue  # a cluster the program does not make, or a name unknown at render time
        providers = [r for r in graph.resources if r.region == addon.region and _provides(r, need)]
        waited = graph.waits_for(addon.urn)
        if any(p.urn in waited for p in providers):
            continue
        name = addon.inputs.get("addonName")
        if providers:
            where = (
                f"the program installs {need.name} ({', '.join(p.name for p in providers)}) but the add-on does not "
                "wait for it, so Pulumi creates both at once and the add-on is applied before its CRDs exist"
            )
        else:
            where = f"nothing in the program installs {need.name} on cluster {clusters[0].name}"
        yield Finding(
            RULE,
            addon.urn,
            f"EKS add-on {name!r} needs {need.name} in the cluster (a documented prerequisite: its manifests use "
            f"{need.name}'s API, {need.crd}), and {where}: the add-on never becomes ACTIVE (CREATE_FAILED or "
            "DEGRADED) and pulumi-aws's create waiter fails (unexpected state 'CREATE_FAILED', wanted target "
            "'ACTIVE')",
            need.how,
        )
