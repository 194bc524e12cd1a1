"""Where the scheduler would put a pod: node labels against selectors and affinity, taints against tolerations.

Only the required parts count (nodeSelector, requiredDuringScheduling node
affinity, NoSchedule/NoExecute taints): preferences cannot keep a pod Pending.

A node carries its group's labels and the ones kubelet, EKS and the AWS cloud provider put on every node
(``WELL_KNOWN``): where the program says their values (the zones of the group's subnets, its instance types, its
AMI's architecture, its name and capacity type) a node of the group may carry any of them; where it does not, a
selector on them is not judged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tokenplane.proof.deployability.k8s_syntax import quantity
from tokenplane.proof.render import RenderedResource

if TYPE_CHECKING:
    from tokenplane.proof.deployability.graph import Graph

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
# Labels kubelet and the AWS cloud provider put on every node (kubernetes.io/docs/reference/labels-annotations-taints),
# the legacy beta spellings included.
WELL_KNOWN = frozenset(
    {
        HOSTNAME,
        ZONE,
        "topology.kubernetes.io/region",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "node.kubernetes.io/instance-type",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/instance-type",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "k8s.io/cloud-provider-aws",
    }
)
# Prefixes AWS's own node components may label under (managed node groups set eks.amazonaws.com/nodegroup,
# capacityType, nodegroup-image, sourceLaunchTemplate*; the cloud controller topology.k8s.aws/zone-id; kubelet adds a
# CSI driver's topology keys when the driver registers).
AWS_PREFIXES = ("eks.amazonaws.com/", "topology.k8s.aws/", "topology.ebs.csi.aws.com/", "topology.efs.csi.aws.com/")

# EKS spells taint effects in upper snake case; Kubernetes in camel case.
EKS_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


@dataclass(frozen=True)
class NodeGroup:
    """The labels and taints every node of one EKS managed node group carries."""

    resource: RenderedResource
    labels: Mapping[str, str]
    taints: tuple[tuple[str, str, str], ...]  # key, value, Kubernetes effect
    # Well-known labels whose values the program says: each node carries one of them (a zone of its subnets...).
    possible: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, resource: RenderedResource, graph: Graph | None = None) -> NodeGroup:
        labels = {str(k): str(v) for k, v in (resource.inputs.get("labels") or {}).items()}
        taints = tuple(
            (str(t.get("key")), str(t.get("value", "")), EKS_EFFECTS.get(str(t.get("effect")), str(t.get("effect"))))
            for t in resource.inputs.get("taints") or []
        )
        return cls(resource, labels, taints, _possible(resource, graph))


def _possible(resource: RenderedResource, graph: Graph | None) -> dict[str, frozenset[str]]:
    inputs = resource.inputs
    out: dict[str, frozenset[str]] = {}
    if graph is not None:
        zones = {
            str(s.inputs["availabilityZone"])
            for s in graph.referenced(resource, "subnetIds")
            if isinstance(s.inputs.get("availabilityZone"), str)
        }
        if zones:
            out[ZONE] = out["failure-domain.beta.kubernetes.io/zone"] = frozenset(zones)
    types = [str(t) for t in inputs.get("instanceTypes") or []]
    if types:
        out["node.kubernetes.io/instance-type"] = out["beta.kubernetes.io/instance-type"] = frozenset(types)
    ami = str(inputs.get("amiType") or "")
    if ami:
        arch = "arm64" if "ARM" in ami else "amd64"
        out["kubernetes.io/arch"] = out["beta.kubernetes.io/arch"] = frozenset({arch})
        os_name = "windows" if ami.startswith("WINDOWS") else "linux"
        out["kubernetes.io/os"] = out["beta.kubernetes.io/os"] = frozenset({os_name})
    if isinstance(inputs.get("nodeGroupName"), str):
        out["eks.amazonaws.com/nodegroup"] = frozenset({inputs["nodeGroupName"]})
    out["eks.amazonaws.com/capacityType"] = frozenset({str(inputs.get("capacityType") or "ON_DEMAND")})
    return out


def _expression_matches(
    labels: Mapping[str, str], expr: Mapping[str, Any], possible: Mapping[str, frozenset[str]] | None = None
) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), [str(v) for v in expr.get("values") or []]
    if key not in labels and possible is not None and (str(key) in WELL_KNOWN or str(key) in possible):
        return _well_known_matches(possible.get(str(key)), str(op), values)
    present = key in labels
    if op == "In":
        return present and labels[str(key)] in values
    if op == "NotIn":
        return not present or labels[str(key)] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    return False  # Gt/Lt on our labels never apply; an unknown operator matches nothing, as in the API server


def _well_known_matches(values_there: frozenset[str] | None, op: str, values: list[str]) -> bool:
    """Whether some node may satisfy an expression on a label every node carries (``values_there``: the values the
    group's nodes may carry; None: not known, so not judged)."""
    if op == "DoesNotExist":
        return False
    if values_there is None or op == "Exists":
        return op in ("In", "NotIn", "Exists", "Gt", "Lt")
    if op == "In":
        return bool(values_there & set(values))
    if op == "NotIn":
        return bool(values_there - set(values))
    return True  # Gt/Lt on a well-known label: not judged


def affinity_matches(
    labels: Mapping[str, str], pod: Mapping[str, Any], possible: Mapping[str, frozenset[str]] | None = None
) -> bool:
    """True if a node with ``labels`` (and, for the well-known ones, one of the ``possible`` values) satisfies the
    pod's nodeSelector and required node affinity."""
    for key, value in (pod.get("nodeSelector") or {}).items():
        if key not in labels and possible is not None and (key in WELL_KNOWN or key in possible):
            if not _well_known_matches(possible.get(key), "In", [str(value)]):
                return False
            continue
        if labels.get(key) != str(value):
            return False
    required = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    # Terms are ORed; the expressions of one term are ANDed.
    return any(
        all(_expression_matches(labels, e, possible) for e in term.get("matchExpressions") or []) for term in terms
    )


def tolerates(pod: Mapping[str, Any], taints: tuple[tuple[str, str, str], ...]) -> bool:
    """True if the pod tolerates every NoSchedule/NoExecute taint."""
    tolerations = pod.get("tolerations") or []
    for key, value, effect in taints:
        if effect == "PreferNoSchedule":
            continue
        if not any(_tolerates(t, key, value, effect) for t in tolerations):
            return False
    return True


def _tolerates(t: Mapping[str, Any], key: str, value: str, effect: str) -> bool:
    if t.get("effect") not in (None, "", effect):
        return False
    if t.get("operator") == "Exists":
        return t.get("key") in (None, "", key)
    return t.get("key") == key and str(t.get("value", "")) == value


def lands_on(pod: Mapping[str, Any], group: NodeGroup) -> bool:
    return affinity_matches(group.labels, pod, group.possible) and tolerates(pod, group.taints)


def requested(pod: Mapping[str, Any], resource_name: str) -> float:
    """The most any one container (init containers included) requests of ``resource_name``."""
    most = 0.0
    for container in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
        resources = container.get("resources") or {}
        value = (resources.get("limits") or {}).get(resource_name) or (resources.get("requests") or {}).get(
            resource_name
        )
        if value is not None:
            most = max(most, quantity(value))
    return most
