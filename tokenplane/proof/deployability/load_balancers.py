"""A LoadBalancer Service gets an address only from a controller that serves it, with the IAM to do so.

``service.beta.kubernetes.io/aws-load-balancer-type: external`` (or
``nlb-ip``, or ``loadBalancerClass: service.k8s.aws/nlb``) tells the in-tree
cloud provider to leave the Service alone; only the AWS Load Balancer
Controller acts on it, and it needs an IAM role (IRSA) to create the NLB.
Without both, ``status.loadBalancer`` stays empty and Pulumi's Service await
times out after ten minutes.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.render import LB_CONTROLLER_CHART

RULE = "lb-controller"
TYPE_ANNOTATION = "service.beta.kubernetes.io/aws-load-balancer-type"
LBC_TYPES = ("external", "nlb-ip")
LBC_CLASS = "service.k8s.aws/nlb"
ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"


def needs_controller(service: dict[str, object]) -> bool:
    annotations = lookup(service, "metadata.annotations") or {}
    return annotations.get(TYPE_ANNOTATION) in LBC_TYPES or lookup(service, "spec.loadBalancerClass") == LBC_CLASS


def controller(graph: Graph, region: str) -> tuple[bool, bool]:
    """Whether the AWS Load Balancer Controller runs in ``region``, and whether its Service webhook hands it every
    new LoadBalancer Service (chart value ``enableServiceMutatorWebhook``, on by default since v2.5)."""
    releases = graph.releases(region, LB_CONTROLLER_CHART)
    webhook = any(
        (r.inputs.get("values") or {}).get("enableServiceMutatorWebhook", True) is not False for r in releases
    )
    return bool(releases), webhook


def by_controller(graph: Graph, region: str, service: KubeObject) -> bool:
    """Whether the Load Balancer Controller builds this LoadBalancer Service's NLB: it asks for it, or names no
    class while the controller's webhook gives it every new one."""
    klass = lookup(service.manifest, "spec.loadBalancerClass")
    if lookup(service.manifest, "spec.type") != "LoadBalancer" or klass not in (None, LBC_CLASS):
        return False
    installed, webhook = controller(graph, region)
    return needs_controller(service.manifest) or (installed and webhook and klass is None)


AUTO_MODE_CLASS = "eks.amazonaws.com/nlb"  # EKS Auto Mode's own load balancing
EKS_CLUSTER = "aws:eks/cluster:Cluster"


def _classes(graph: Graph, region: str) -> dict[str, str]:
    """Each loadBalancerClass a controller of the region serves -> that controller: the AWS Load Balancer
    Controller's (its ``loadBalancerClass`` value, default ``service.k8s.aws/nlb``), and Auto Mode's on a cluster
    that has it on (``computeConfig.enabled``)."""
    out = {
        str((r.inputs.get("values") or {}).get("loadBalancerClass") or LBC_CLASS): LB_CONTROLLER_CHART
        for r in graph.releases(region, LB_CONTROLLER_CHART)
    }
    for cluster in graph.of_type(EKS_CLUSTER, region):
        if lookup(cluster.inputs, "computeConfig.enabled") is True:
            out[AUTO_MODE_CLASS] = "EKS Auto Mode"
    return out


def _unserved_classes(graph: Graph, region: str) -> Iterator[Finding]:
    """A LoadBalancer Service whose loadBalancerClass no controller of the cluster serves: the in-tree cloud
    provider leaves every Service that names a class to that class's controller
    (https://kubernetes.io/docs/concepts/services-networking/service/#load-balancer-class), so nothing provisions it."""
    served = _classes(graph, region)
    for service in graph.kube(region, "Service"):
        klass = lookup(service.manifest, "spec.loadBalancerClass")
        if lookup(service.manifest, "spec.type") != "LoadBalancer" or not isinstance(klass, str) or klass in served:
            continue
        if klass == LBC_CLASS:
            continue  # the missing controller is reported below
        known = ", ".join(f"{k} ({v})" for k, v in sorted(served.items())) or "none"
        yield Finding(
            RULE,
            service.urn,
            f"Service {service.namespace}/{service.name} asks for loadBalancerClass {klass!r}, which no controller of "
            f"the cluster serves (served here: {known}); the cloud provider skips Services that name a class, so "
            "nothing provisions a load balancer, status.loadBalancer stays empty and Pulumi's Service await times out",
            f"name a class a controller here serves ({known}), or install the controller for {klass!r}"
            + (" (turn on EKS Auto Mode: the cluster's computeConfig)" if klass == AUTO_MODE_CLASS else ""),
        )


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        yield from _unserved_classes(graph, region)
        controllers = graph.releases(region, LB_CONTROLLER_CHART)
        services = [
            s
            for s in graph.kube(region, "Service")
            if lookup(s.manifest, "spec.type") == "LoadBalancer" and needs_controller(s.manifest)
        ]
        if not services:
            continue
        for service in services:
            if not controllers:
                yield Finding(
                    RULE,
                    service.urn,
                    f"Service {service.namespace}/{service.name} is a LoadBalancer for the AWS Load Balancer "
                    f"Controller, which is not installed in {region}: it never gets an address",
                    f"install the {LB_CONTROLLER_CHART} chart with an IRSA role in the cluster's add-ons",
                )
            elif not {r.urn for r in controllers} & set(service.resource.dependencies):
                yield Finding(
                    RULE,
                    service.urn,
                    f"Service {service.namespace}/{service.name} does not depend on the {LB_CONTROLLER_CHART} "
                    "release: created first, it misses the controller's webhook and its NLB settings",
                    "add depends_on=[the controller release] to the Service",
                )
        for release in controllers:
            values = release.inputs.get("values") or {}
            annotations = (values.get("serviceAccount") or {}).get("annotations") or {}
            if not annotations.get(ROLE_ANNOTATION):
                yield Finding(
                    RULE,
                    release.urn,
                    f"the {LB_CONTROLLER_CHART} release has no IAM role (serviceAccount.annotations"
                    f"[{ROLE_ANNOTATION}]), so it cannot create an NLB",
                    "give the controller's service account an IRSA role with the controller's IAM policy",
                )
            if not values.get("clusterName"):
                yield Finding(
                    RULE,
                    release.urn,
                    f"the {LB_CONTROLLER_CHART} release has no clusterName value; the chart refuses to install",
                    "set values.clusterName to the EKS cluster's name",
                )
