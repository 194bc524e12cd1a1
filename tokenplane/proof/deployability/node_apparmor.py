"""A pod that asks for an AppArmor profile lands only on nodes whose kernel has AppArmor.

The kubelet admits a pod only if its host can enforce the AppArmor profiles the pod asks for
(``pkg/security/apparmor/validate.go``, ``validator.Validate``, called by the kubelet's admit handler): a profile
other than ``Unconfined`` (``RuntimeDefault`` included) in the pod's or any container's ``securityContext``, or a
``container.apparmor.security.beta.kubernetes.io/<name>`` annotation other than ``unconfined``, makes AppArmor
required (``helpers.go``, ``isRequired``), and a host without it answers ``Cannot enforce AppArmor: AppArmor is
not enabled on the host``: the pod is Failed at admission (reason AppArmor), the ReplicaSet makes another, the
scheduler (which does not know AppArmor) binds it to the same kind of node, and the Deployment never becomes
available. Read at kubernetes/kubernetes ``pkg/security/apparmor`` after the v1.30 move to the ``appArmorProfile``
fields (the host check runs once, at kubelet start: ``validateHost``, runc's ``apparmor.IsEnabled``); the Kubernetes
1.35 tutorial says the same (https://kubernetes.io/docs/tutorials/security/apparmor/, release-1.35: "The kubelet
verifies that AppArmor is enabled on the host before admitting a pod with AppArmor explicitly configured"), and
RuntimeDefault was refused on such hosts in the annotation days too (https://github.com/VictoriaMetrics/operator/issues/1120).

The Amazon Linux EKS AMIs a managed node group's ``amiType`` boots (AL2023_*, AL2_*, and no ``amiType``, which EKS
fills with an Amazon Linux type) have no AppArmor: Amazon Linux 2023 uses SELinux
(https://docs.aws.amazon.com/linux/al2023/ug/selinux.html), as Amazon Linux 2 does. Bottlerocket enforces SELinux
(bottlerocket-os/bottlerocket ``SECURITY_FEATURES.md``) but its kernel's AppArmor was not read, so it is not judged;
Ubuntu's EKS AMIs have AppArmor, and come only as a custom AMI (``amiType`` CUSTOM or a launch template's
``imageId``), not judged either; nor are Windows nodes.

Cannot see: Bottlerocket and custom AMIs, launch templates made outside the program, Karpenter or self-managed
nodes (a region with NodePools is skipped), a pod that lands on no managed node group the program declares, and a
workload whose node groups only partly lack AppArmor (not flagged: a replica may land on one that has it).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph
from tokenplane.proof.deployability.node_disk import known_ami
from tokenplane.proof.deployability.pod_sysctls import OTHER_NODE_KINDS
from tokenplane.proof.deployability.scheduling import NodeGroup, lands_on

RULE = "apparmor-on-host"
ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
NO_APPARMOR = ("AL",)  # ami_family's name for the Amazon Linux EKS AMIs, which have no AppArmor


def _asks(context: Any) -> str | None:
    profile = context.get("appArmorProfile") if isinstance(context, Mapping) else None
    kind = profile.get("type") if isinstance(profile, Mapping) else None
    return kind if isinstance(kind, str) and kind != "Unconfined" else None


def required(pod: Mapping[str, Any], annotations: Mapping[str, Any]) -> str | None:
    """The AppArmor profile that makes AppArmor required for ``pod`` (helpers.go ``isRequired``), or None."""
    if (kind := _asks(pod.get("securityContext"))) is not None:
        return f"pod appArmorProfile {kind}"
    for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
        if isinstance(container, Mapping) and (kind := _asks(container.get("securityContext"))) is not None:
            return f"container {container.get('name')} appArmorProfile {kind}"
    for key, value in annotations.items():
        if str(key).startswith(ANNOTATION) and isinstance(value, str) and value != "unconfined":
            return f"annotation {key}: {value}"
    return None


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        if graph.kube(region, *OTHER_NODE_KINDS):
            continue
        groups = [NodeGroup.of(r, graph) for r in graph.of_type(NODE_GROUP, region)]
        for workload in graph.pod_bearers(region):
            template = workload.pod_template()
            pod = template.get("spec")
            if not isinstance(pod, dict):
                continue
            metadata = template.get("metadata")
            annotations = (metadata.get("annotations") if isinstance(metadata, dict) else None) or {}
            asked = required(pod, annotations if isinstance(annotations, Mapping) else {})
            if asked is None:
                continue
            landing = [g for g in groups if lands_on(pod, g)]
            if not landing or not all(_without_apparmor(graph, g) for g in landing):
                continue
            names = ", ".join(
                f"{g.resource.name} ({g.resource.inputs.get('amiType') or 'default AL2023'})" for g in landing
            )
            yield Finding(
                RULE,
                workload.urn,
                f"{workload.kind} {workload.namespace}/{workload.name}'s pods ask for AppArmor ({asked}), and every "
                f"node group they may land on ({names}) boots an Amazon Linux EKS AMI, which has no "
                'AppArmor (it uses SELinux): the kubelet rejects each pod at admission ("Cannot enforce AppArmor: '
                'AppArmor is not enabled on the host", pkg/security/apparmor/validate.go), so no replica starts '
                "and pulumi up's await times out",
                "drop appArmorProfile (or set it to Unconfined) on these nodes: the runtime's default seccomp "
                "profile (seccompProfile RuntimeDefault) and SELinux confine the container instead",
            )


def _without_apparmor(graph: Graph, group: NodeGroup) -> bool:
    known = known_ami(graph, group.resource)
    return known is not None and known[0] in NO_APPARMOR
